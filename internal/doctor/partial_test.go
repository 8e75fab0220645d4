package doctor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

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
func TestBlockReaderEdges(t *testing.T) {
	exact := strings.Repeat("a", maxLine)
	over := strings.Repeat("b", maxLine+1)
	overCR := strings.Repeat("c", maxLine) + "\r"
	in := "x\r\n" + exact + "\n" + over + "\n" + overCR + "\r\n\nlast"
	lines, cuts, err := readLines(strings.NewReader(in), batchBytes, maxLine)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		n   int
		cut int64
	}
	want := []got{{1, 0}, {maxLine, 0}, {maxLine, 1}, {maxLine, 1}, {0, 0}, {4, 0}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		if len(lines[i]) != w.n || cuts[i] != w.cut {
			t.Errorf("line %d: %d bytes, cut %d; want %d, %d", i+1, len(lines[i]), cuts[i], w.n, w.cut)
		}
	}
}

// readLines is every line a blockReader finds in r, and what was cut of each.
func readLines(r io.Reader, blockSize, maxLine int) ([]string, []int64, error) {
	br := newBlockReader(r, blockSize, maxLine)
	var lines []string
	var cuts []int64
	for {
		var b blockLines
		end, err := br.read(&b)
		if b.leadEnd > 0 {
			lines, cuts = append(lines, b.text[:b.leadEnd]), append(cuts, b.leadCut)
		}
		for start := b.from; ; {
			end, next, cut, ok := b.lineAt(start)
			if !ok {
				break
			}
			lines, cuts = append(lines, b.text[start:end]), append(cuts, cut)
			start = next
		}
		if end || err != nil {
			return lines, cuts, err
		}
	}
}

// FuzzBlockReaderSplitsLines holds the block reader, at small block and line sizes so that
// lines straddle blocks and exceed both, to what a line is: the text between two "\n" without
// a "\r" before the second, none after the last "\n", and its first maxLine bytes kept. The
// log arrives in reads of any size.
func FuzzBlockReaderSplitsLines(f *testing.F) {
	for _, s := range []string{"", "\n", "a", "a\n", "a\r\n", "a\r", "\r\n\r\n", "abcdefgh\r\nij\n", "abcdefghijklmnopqrstuvwxyz\r\n\rx", "0123456789abcdef\r"} {
		f.Add(s, uint8(4), uint8(5), false)
		f.Add(s, uint8(1), uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, in string, block, max uint8, oneByte bool) {
		blockSize, maxLine := int(block%32)+1, int(max%32)+1
		var r io.Reader = strings.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		lines, cuts, err := readLines(r, blockSize, maxLine)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		var wantCuts []int64
		parts := strings.Split(in, "\n")
		for i, p := range parts {
			last := i == len(parts)-1
			if last && p == "" {
				break
			}
			if !last {
				p = strings.TrimSuffix(p, "\r")
			}
			keep := min(len(p), maxLine)
			want, wantCuts = append(want, p[:keep]), append(wantCuts, int64(len(p)-keep))
		}
		if !slices.Equal(lines, want) || !slices.Equal(cuts, wantCuts) {
			t.Fatalf("%q at block %d, line %d:\nread %q cut %v\nwant %q cut %v", in, blockSize, maxLine, lines, cuts, want, wantCuts)
		}
	})
}

// A read error after some lines returns them and the error, never the line it cut.
func TestBlockReaderReadError(t *testing.T) {
	cut := errors.New("stream cut")
	for _, in := range []string{"a\nb\npartial", strings.Repeat("x", 40) + "\nlong line cut " + strings.Repeat("y", 40)} {
		lines, _, err := readLines(io.MultiReader(strings.NewReader(in), iotest.ErrReader(cut)), 8, 16)
		whole := strings.Split(in, "\n")
		want := whole[:len(whole)-1]
		for i := range want {
			want[i] = want[i][:min(len(want[i]), 16)]
		}
		if !errors.Is(err, cut) || !slices.Equal(lines, want) {
			t.Errorf("%q: %q, %v; want %q and the error", in, lines, err, want)
		}
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
