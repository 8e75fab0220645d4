package doctor

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// FuzzChannelMatchesRegexp holds the hand-written connection reader to channelRe, the regular
// expression that documents every spelling: the same verdict and the same fields on any input.
func FuzzChannelMatchesRegexp(f *testing.F) {
	for _, s := range []string{
		"Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", "Channel 04 : 25[101d0] -> 24[101c0] via NET/Libfabric/0/GDRDMA",
		"Ring 00 : 26[2] -> 30[6] via P2P/IPC", "Ring 00 : 7 -> 8 [send] via NET/Socket/0", "Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0  ",
		"Channel 00/02 :    0   1", "Channel 1 : 2 -> 3 via  ", "x Ring y Channel 3 : 1 -> 2 via SHM", "Channel 0 : 1[AB] -> 2 via P2P",
		"Channel 0 : 1 -> 2 [send] [send] via X", "Channel 0/ : 1 -> 2 via X",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, '\n') >= 0 {
			return // a line holds none: the block reader ends lines at each
		}
		m := channelRe.FindStringSubmatch(s)
		ch, from, to, via, ok := parseChannel(s)
		if (m != nil) != ok {
			t.Fatalf("%q: regexp %v, hand %v", s, m != nil, ok)
		}
		if ok && (ch != m[1] || from != m[2] || to != m[3] || via != m[5]) {
			t.Fatalf("%q: regexp %q %q %q %q, hand %q %q %q %q", s, m[1], m[2], m[3], m[5], ch, from, to, via)
		}
	})
}

// FuzzDeviceNumbersMatchesRegexp holds deviceNumbers to netDevice's replacement.
func FuzzDeviceNumbersMatchesRegexp(f *testing.F) {
	for _, s := range []string{"NET/Libfabric/0/GDRDMA", "NET/IB/12", "P2P/CUMEM/read", "NET/IBext_v8/7/GDRDMA", "a/1b/2", "/3/", "x/٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := deviceNumbers(s), netDevice.ReplaceAllString(s, "/<n>"); got != want {
			t.Fatalf("%q: hand %q, regexp %q", s, got, want)
		}
	})
}

// FuzzConnectionFastPath holds the reading of a message that starts "Channel " (channelAfter
// at its start) to channelOf over the whole message and its receive test to strings.Contains.
func FuzzConnectionFastPath(f *testing.F) {
	for _, s := range []string{
		"00/0 : 8[0] -> 0[0] [receive] via NET/IB/0  ", "0 : 1 -> 2 via X [receive] via Y", "0 : 1 -> 2 via [receive] via ",
		"0 : 1 -> 2 [send] via P2P/IPC", "03/24 :    0   1   2", "0 : 1 -> 2 via X [receive] via",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		msg := "Channel " + s
		ch, from, to, via, recv, ok := channelAfter(s)
		if !ok {
			return // the slow path reads it as before
		}
		wch, wfrom, wto, wvia, wok := channelOf(msg)
		if !wok || ch != wch || from != wfrom || to != wto || via != wvia {
			t.Fatalf("%q: fast %q %q %q %q, channelOf %q %q %q %q %v", msg, ch, from, to, via, wch, wfrom, wto, wvia, wok)
		}
		if want := strings.Contains(msg, " [receive] via "); recv != want {
			t.Fatalf("%q: receive %v, strings.Contains %v", msg, recv, want)
		}
	})
}

// FuzzConnectionTextIsChannelAfter holds the plain line's reading of a connection
// (connectionText), numbers read as it goes, to channelAfter's strings read by atoi.
func FuzzConnectionTextIsChannelAfter(f *testing.F) {
	for _, s := range []string{
		"00/0 : 8[0] -> 0[0] [receive] via NET/IB/0  ", "0 : 1 -> 2 via X [receive] via Y", "0 : 1 -> 2 via [receive] via ",
		"0 : 1 -> 2 [send] via P2P/IPC", "03/24 :    0   1   2", "31/0 : 3[3] -> 4[4] via P2P/CUMEM/read", "1 : 2[ab] -> 3[AB] via x",
		"0 : 1 -> 2 [send] [send] via X", "0/ : 1 -> 2 via X", "12345678901 : 99999999999999999999 -> 0 via x", "0 : 1 -> 2 via ",
		"0 : 1 -> 2 [receive]  via x", "0 : 1 -> 2 [recv] via x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, '\n') >= 0 {
			return // a line holds none
		}
		var c connectionText
		ok := c.read(s)
		wch, wfrom, wto, wvia, wrecv, wok := channelAfter(s)
		if ok != wok || ok && (c.channel != atoi(wch) || c.from != atoi(wfrom) || c.to != atoi(wto) || c.via != wvia || c.recv != wrecv) {
			t.Fatalf("%q: connectionText %+v %v, channelAfter %q %q %q %q %v %v", s, c, ok, wch, wfrom, wto, wvia, wrecv, wok)
		}
	})
}

// FuzzConnectionLineIsReadLine holds readConnectionLine, where it reads a line, to readLine:
// the same record, field by field; and the small record a batch keeps of it (connRec).
func FuzzConnectionLineIsReadLine(f *testing.F) {
	for _, s := range []string{
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
		"[1,0]<stdout>:h-1:10:11 [3] NCCL INFO Channel 01/0 : 3[3] -> 11[3] [receive] via NET/Libfabric/3/GDRDMA",
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC comm 0x7f nRanks 08",
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC h:1:3 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 - Init START",
		"NCCL h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM",
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\x1b[32m [repeated 3x]\x1b[0m",
		"h:1:2 [0] NCCL INFO Channel 03/24 :    0   1   2   3",
		" NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM",
	} {
		f.Add(s)
	}
	addLogLines(f)
	f.Fuzz(func(t *testing.T, line string) {
		if !strings.Contains(line, connectionMarker) || strings.IndexByte(line, '\n') >= 0 {
			return
		}
		// Each reads the line as its own scan says, and as a plain block's line if it is one.
		for _, plain := range []bool{false, plainText(line)} {
			var fast, general reading
			for _, rd := range []*reading{&fast, &general} {
				rd.placed, rd.said, rd.classed = map[string]*placed{}, map[string]readMessageResult{}, map[string]string{}
			}
			got, ok := fast.readConnectionLine(line, 7, plain)
			if !ok {
				return
			}
			want := general.readLine(line, 7, plain, nil)
			if len(want) != 1 || !reflect.DeepEqual(got, want[0]) {
				t.Fatalf("%q (plain %v):\nreadConnectionLine %+v\nreadLine           %+v", line, plain, got, want)
			}
			// Its small record (a line not cut), in a batch's text after other lines.
			var c plainConnection
			fast.plainConnectionOf(line, plain, &c)
			const before = "other lines\n"
			smalls, ok := c.appendCompact(nil, len(before), len(line), 3, threadSlot(c.pid, c.tid), 0)
			if !ok {
				// Only a field wider than a small record's is kept whole: a prefix past 64 KiB, a
				// host, pid or tid past 255 bytes, a number past 2^31.
				if c.host <= math.MaxUint16 && c.msg <= math.MaxUint16 && len(c.hostName) <= math.MaxUint8 &&
					len(c.pid) <= math.MaxUint8 && len(c.tid) <= math.MaxUint8 &&
					max(c.channel, c.from, c.to, c.printer, c.commRanks) <= math.MaxInt32 {
					t.Fatalf("%q: no small record", line)
				}
				return
			}
			small := smalls[0]
			whole := general.readLine(line, 0, plain, nil)
			if got := small.record(before+line, fast.placedList[small.via]); !reflect.DeepEqual(got, whole[0]) || small.before != 3 {
				t.Fatalf("%q (plain %v):\nits small record %+v (after %d)\nreadLine         %+v", line, plain, got, small.before, whole)
			}
			if got, want := small.threadKey(before+line), threadKey(procKey{whole[0].host, whole[0].pid, whole[0].tid}); got != want {
				t.Fatalf("%q: its thread %q, of its record %q", line, got, want)
			}
		}
	})
}

// TestPlaceAnswersEveryTransport: a batch places transports through the last one placed and
// its hashed slots, then its map. A hundred transports in turn (more than it has slots), and
// back and forth, each get their own row and place, and one placed value each.
func TestPlaceAnswersEveryTransport(t *testing.T) {
	rd := reading{placed: map[string]*placed{}}
	var vias []string
	for n := range 99 {
		vias = append(vias, fmt.Sprintf("NET/Libfabric/%d/GDRDMA", n))
	}
	vias = append(vias, "P2P/CUMEM/read comm 0x7f nRanks 08")
	first := map[string]*placed{}
	for round := range 3 {
		for i := range vias {
			via := vias[i]
			if round == 1 {
				via = vias[(i*7)%len(vias)]
			}
			p := rd.place(strings.Clone(via))
			name, where := placeTransport(transportName(via))
			if p.via != via || p.name != name || p.where != where {
				t.Fatalf("%q placed as %+v, want %q %q", via, p, name, where)
			}
			if f := first[via]; f != nil && f != p {
				t.Fatalf("%q placed twice", via)
			}
			first[via] = p
		}
	}
	if p := rd.place(vias[len(vias)-1]); p.commRanks != 8 {
		t.Fatalf("RCCL's size: %d, want 8", p.commRanks)
	}
}

// FuzzHoldsBracketAndNIsItsDefinition holds the eight-bytes-at-a-time test to the two searches
// it stands for.
func FuzzHoldsBracketAndNIsItsDefinition(f *testing.F) {
	for _, s := range []string{"", "N", "[", "P2P/CUMEM/read", "NET/Libfabric/0/GDRDMA", "SHM [receive] via x",
		"\x00\x80[\xffN\x01", "0123456[", "01234567N", "\x5a\x5b\x4d\x4e\x4f\x5c\xdb\xce"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bracket, n := holdsBracketAndN(s)
		if bracket != strings.Contains(s, "[") || n != strings.Contains(s, "N") {
			t.Fatalf("%q: holdsBracketAndN %v %v", s, bracket, n)
		}
	})
}
