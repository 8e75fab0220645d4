package doctor

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// A line longer than any buffer (a progress bar redrawn with \r for hours) must not end the read:
// what follows is still read, and the cut is reported exactly.
func TestLinesOfAnyLengthAreRead(t *testing.T) {
	head, _ := os.ReadFile("testdata/p5-efa.log")
	long := "step 1/100 " + strings.Repeat("\r[=====>   ] loss 2.1043", 150_000) // ≈3.5 MB, one line
	tail := "h1:55:61 [0] NCCL WARN NET/OFI Unresponsive receiver detected: peer fi_addr 0x1, aborting\n"
	var b bytes.Buffer
	b.Write(head)
	b.WriteString(long + "\n")
	b.WriteString(tail)
	l, err := Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(head, []byte("\n"))
	if l.Lines != lines+2 {
		t.Errorf("read %d lines, want %d", l.Lines, lines+2)
	}
	if len(l.CutLines) != 1 || l.CutLines[0].Line != lines+1 || l.CutLines[0].BytesCut != int64(len(long)-maxLine) {
		t.Errorf("cut lines %+v, want line %d with %d bytes cut", l.CutLines, lines+1, len(long)-maxLine)
	}
	if len(l.Unreachable) == 0 {
		t.Error("the error after the long line was never read")
	}
	r := Diagnose(l, nil, profile(t, "p5-efa"), "profile p5-efa")
	if !hasFinding(r, "efa-unreachable") || len(r.CutLines) != 1 {
		t.Errorf("report: findings %v, cut %v", r.Findings, r.CutLines)
	}
}

func hasFinding(r *Report, code string) bool {
	for _, f := range r.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// Lines at and around the limit, without a final newline, and with CRLF endings.
func TestLineReaderEdges(t *testing.T) {
	exact := strings.Repeat("a", maxLine)
	over := strings.Repeat("b", maxLine+1)
	in := "x\r\n" + exact + "\n" + over + "\n\nlast"
	lr := newLineReader(strings.NewReader(in))
	type got struct {
		n   int
		cut int64
	}
	want := []got{{1, 0}, {maxLine, 0}, {maxLine, 1}, {0, 0}, {4, 0}}
	for i, w := range want {
		line, cut, err := lr.appendNext(nil)
		if err != nil || len(line) != w.n || cut != w.cut {
			t.Errorf("line %d: %d bytes, cut %d, %v; want %d, %d", i+1, len(line), cut, err, w.n, w.cut)
		}
	}
	if _, _, err := lr.appendNext(nil); err != io.EOF {
		t.Errorf("after the last line: %v", err)
	}
}

// A log cut before NCCL set up any communicator cannot be compared with a profile: the verdict
// says so instead of passing.
func TestNoCommunicatorGivesAnUnknownVerdict(t *testing.T) {
	head := "h1:55:60 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\nh1:55:60 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.2-aws\n"
	l, err := Parse(strings.NewReader(head))
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, nil, profile(t, "p5-efa"), "profile p5-efa")
	if r.Verdict == nil || r.Verdict.Status != VerdictUnknown || r.Verdict.Match || !strings.Contains(r.Verdict.Reason, "no communicator") {
		t.Errorf("verdict %+v", r.Verdict)
	}
	if r := Diagnose(l, nil, nil, ""); r.Verdict != nil {
		t.Errorf("a verdict nobody asked for: %+v", r.Verdict)
	}
}

// Lines as people paste them into issues: without the host:pid:tid prefix, or without even
// "NCCL INFO"; and srun -l's "0: " prefix on full lines.
func TestBareExcerptAndSrunPrefix(t *testing.T) {
	in := strings.Join([]string{
		"NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
		"Channel 01 : 1[1] -> 2[0] via NET/Socket/0",
		"0: gpu-st-1:4100:4150 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[1] via P2P/CUMEM/read",
	}, "\n")
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, nil, nil, "")
	if len(r.Communicators) != 1 || !r.Communicators[0].Excerpt {
		t.Fatalf("communicators %+v", r.Communicators)
	}
	c := r.Communicators[0]
	got := map[string]int{}
	for _, conn := range c.Connections {
		got[conn.Where+" "+conn.Class] += conn.Count
	}
	if got["intra-node shm"] != 1 || got["inter-node net-socket"] != 1 || got["intra-node p2p"] != 1 || c.Ranks != 0 {
		t.Errorf("connections %v, ranks %d", got, c.Ranks)
	}
}

// TestExcerptsOfSeveralThreadsReadInTheLogsOrder: connections logged without an Init line by
// several threads become one excerpt communicator; where two threads name one rank on
// different hosts (excerpts of two runs pasted together), the thread the log shows first
// decides, every time. Host a logs rank 0 first, so ranks 0 and 1 share host a and their
// socket connection is within the node; host b's later claim on rank 0 changes nothing.
func TestExcerptsOfSeveralThreadsReadInTheLogsOrder(t *testing.T) {
	log := strings.Join([]string{
		"a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/Socket/0",
		"b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/Socket/0",
		"c:4:4 [0] NCCL INFO Channel 01/0 : 2[0] -> 3[1] via NET/Socket/0",
		"a:3:3 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via NET/Socket/0",
	}, "\n") + "\n"
	for range 20 { // the threads were absorbed in a map's order
		l, err := Parse(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		r := Diagnose(l, nil, nil, "")
		if len(r.Communicators) != 1 || r.Communicators[0].IntraNode != topology.TransportNetSocket {
			t.Fatalf("want one excerpt communicator with its socket connection within host a: %+v", r.Communicators)
		}
	}
}
