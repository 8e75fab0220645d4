package doctor

import "strings"

// connectionMarker stands before every connection NCCL logs at INFO ("host:pid:tid [dev] NCCL
// INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"): nine lines in ten of a job's log.
const connectionMarker = " NCCL INFO Channel "

// readConnectionLine reads line as readLine would when it is the plainest connection line: text
// without colour, one NCCL record with its whole process prefix before connectionMarker, a
// connection after it, and no other "NCCL " anywhere (no second record, no version). It
// appends the record and returns true; false, appending nothing, for any other line, which
// readLine reads. plain says the line is known to be plain text (plainText of its block). FuzzConnectionLineIsReadLine holds the two equal.
func (rd *reading) readConnectionLine(line string, cut int64, plain bool, out []record) ([]record, bool) {
	// The marker is found from its "NCCL ", the line's first: a line's many spaces made a
	// search for the marker's leading one the costliest step. An earlier "NCCL " is another
	// record, which readLine reads.
	j := strings.Index(line, "NCCL ")
	if j < 1 || line[j-1] != ' ' || !strings.HasPrefix(line[j:], connectionMarker[1:]) {
		return out, false
	}
	k := j - 1
	rest := line[k+len(connectionMarker):]
	if strings.Contains(rest, "NCCL ") {
		return out, false
	}
	if !plain {
		if ascii, nul, esc, em := scanBytes(line); !ascii || nul || esc || em && resetCode(line) {
			return out, false
		}
	}
	_, host, pid, tid, ok := processPrefix(line[:k])
	if !ok {
		return out, false
	}
	ch, from, to, via, recv, ok := channelAfter(rest)
	if !ok {
		return out, false
	}
	out = append(out, record{newLine: true, cut: cut, line: line, nccl: true, host: host, pid: pid, tid: tid,
		slot: threadSlot(pid, tid), level: "INFO", msg: line[k+len(" NCCL INFO "):]})
	r := &out[len(out)-1]
	r.hits = rd.hits[len(rd.hits):len(rd.hits):len(rd.hits)]
	rd.connection(r, recv, ch, from, to, via)
	return out, true
}
