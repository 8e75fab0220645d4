package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"
)

// TestBatchBoundariesChangeNothing: a log is read in blocks, by several goroutines, and applied
// in order. Every corpus fixture, read in blocks so small that their boundaries fall inside
// most of its lines, and after filler lines that are not NCCL output, reads as it does alone in
// one block: the same report but for the line numbers it quotes.
func TestBatchBoundariesChangeNothing(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.log")
	defer func(size int) { batchBytes = size }(batchBytes)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		batchBytes = 1 << 20
		want := reportWithoutLineNumbers(t, string(data))
		for _, size := range []int{61, 256, 997, 4096} {
			batchBytes = size
			for _, before := range []int{0, 1, 7} {
				log := strings.Repeat("application output\n", before) + string(data)
				if got := reportWithoutLineNumbers(t, log); got != want {
					t.Errorf("%s in blocks of %d bytes after %d lines:\n%s\nalone:\n%s", filepath.Base(f), size, before, got, want)
				}
			}
		}
	}
}

func reportWithoutLineNumbers(t *testing.T, log string) string {
	t.Helper()
	l, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, nil, nil, "")
	r.JoinedLines, r.CutLines, r.UnreadLines = nil, nil, nil
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadErrorIsReturnedNotAHalfLog: a read that fails after several batches (a pod's log
// stream cut) is an error, not a report of the part read.
func TestReadErrorIsReturnedNotAHalfLog(t *testing.T) {
	one, err := os.ReadFile("testdata/p5-efa.log")
	if err != nil {
		t.Fatal(err)
	}
	cut := errors.New("stream cut")
	r := io.MultiReader(strings.NewReader(strings.Repeat(string(one), 10)), iotest.ErrReader(cut))
	if l, err := Parse(r); !errors.Is(err, cut) || l != nil {
		t.Fatalf("Parse = %v, %v; want the read error and no log", l, err)
	}
}

// TestMessageCacheOutlivesItsBatch: a batch's reading caches what each message matched, and
// the cache outlives the batch; the batch's own hits are overwritten when it is reused, so a
// cache that kept views of them would answer a repeated message with another message's match.
// Every batch object's first block caches "NCCL_PROTO … LL" at the first hit; after reuse,
// "… Simple" takes that place before "… LL" comes again, so the log's last word on NCCL_PROTO
// is LL only if the cache holds hits of its own.
func TestMessageCacheOutlivesItsBatch(t *testing.T) {
	const ll = "ip-10-0-0-1:12:12 [0] NCCL INFO NCCL_PROTO set by environment to LL\n"
	const simple = "ip-10-0-0-1:12:12 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
	const filler = "application output\n"
	// Every block is one group of lines: a first line as long as simple, then ll, then filler.
	first := strings.Repeat("x", len(simple)-1) + "\n"
	group := len(simple) + len(ll) + 30*len(filler)
	defer func(size int) { batchBytes = size }(batchBytes)
	batchBytes = group
	inFlight := 3*runtime.GOMAXPROCS(0) + 1 // every batch object is used once, then reused
	var log strings.Builder
	for i := range 3 * inFlight {
		if i >= inFlight {
			log.WriteString(simple)
		} else {
			log.WriteString(first)
		}
		log.WriteString(ll)
		log.WriteString(strings.Repeat(filler, 30))
	}
	l, err := Parse(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Env["NCCL_PROTO"]; got != "LL" {
		t.Fatalf("NCCL_PROTO = %q after a log whose every batch ends it with LL; a reused batch's cache answered with overwritten hits", got)
	}
}

// TestCompactConnectionsChangeNothing: a plain connection line is kept as a small record and
// applied by its own path (applyConn). Every fixture alone, and all of them in one log, read
// so gives the same log, field by field, as read into whole records. (That every plain
// connection line has its small record, FuzzConnectionLineIsReadLine holds.)
func TestCompactConnectionsChangeNothing(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.log")
	more, _ := filepath.Glob("testdata/*.log")
	// And a log of our own for what the fixtures do not show: a connection line inside an
	// error chain of its thread (it ends the chain: the return code after it is reported
	// alone), and RCCL's communicator size after a transport larger than its Init line's.
	const own = `h1:10:11 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xc1 - Init START
h1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC comm 0xa nRanks 04
h1:10:11 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer h2<51022>
h1:10:11 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC
h1:10:11 [0] NCCL INFO misc/socket.cc:60 -> 6
`
	// A thread that sets up a second communicator: its connections after the second Init
	// line are the second's, though a batch's earlier lines of the thread were the first's.
	const twoComms = `h1:10:11 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xc1 - Init START
h1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
h1:10:11 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xc1 - Init COMPLETE
h1:10:11 [0] NCCL INFO comm 0xb rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xc2 - Init START
h1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM
h1:10:11 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM
`
	logs := map[string]string{"every fixture": everyFixture(t), "our own": own, "many transports": manyTransports(), "two communicators of a thread": twoComms}
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs[filepath.Base(f)] = string(data)
	}
	defer func(size int) { compactConnections, batchBytes = true, size }(batchBytes)
	batchBytes = 4 << 10 // batches reused many times over, a worker's transports forgotten between
	parse := func(log string, compact bool) *Log {
		compactConnections = compact
		l, err := Parse(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	lines := 0
	for name, log := range logs {
		if whole, small := parse(log, false), parse(log, true); !reflect.DeepEqual(whole, small) {
			t.Errorf("%s: read with small records\n%+v\nread whole\n%+v", name, small, whole)
		}
		lines += strings.Count(log, connectionMarker)
	}
	if lines < 1000 {
		t.Fatalf("%d connection lines in the fixtures: too few to hold the two paths equal", lines)
	}
}

// manyTransports is a log naming more transports than a worker keeps placed (maxPlaced), each
// its own row (letters, not NIC numbers): they are forgotten between batches and placed again,
// under new indexes, which a small record names its transport by.
func manyTransports() string {
	var b strings.Builder
	b.WriteString("h1:10:11 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xc1 - Init START\n")
	// The transports in no order (a fixed pseudo-random one), so that a batch names some of
	// those its worker placed last before forgetting them.
	order := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		k := order.IntN(80)
		fmt.Fprintf(&b, "h1:10:11 [0] NCCL INFO Channel %02d/0 : 0[0] -> 1[1] via NET/Sock%c%c\n", i%64, 'a'+k/26, 'a'+k%26)
	}
	return b.String()
}

// TestThreadNoIsTheKeysIndex: a batch numbers its threads by their keys, the same number for
// the same key whatever its slot's neighbours, a different one for every other key (here many
// share a slot), and none past maxBatchThreads.
func TestThreadNoIsTheKeysIndex(t *testing.T) {
	b := newBatch()
	for round := range 2 {
		seen := map[string]uint16{}
		for i := range 3 * maxBatchThreads {
			key := fmt.Sprintf("h%d:%d:%d", i%maxBatchThreads%7, i%maxBatchThreads, 100+i%maxBatchThreads)
			n := b.threadNo(key, i%maxBatchThreads%5)
			if want, ok := seen[key]; ok && n != want {
				t.Fatalf("round %d: %q numbered %d, then %d", round, key, want, n)
			}
			seen[key] = n
			if n == noThread || int(n) >= len(b.threads) || b.threads[n] != key {
				t.Fatalf("round %d: %q numbered %d, of %d threads", round, key, n, len(b.threads))
			}
		}
		if len(seen) != maxBatchThreads {
			t.Fatalf("round %d: %d keys numbered, want %d", round, len(seen), maxBatchThreads)
		}
		if n := b.threadNo("another:1:2", 3); n != noThread {
			t.Fatalf("round %d: a thread past %d numbered %d", round, maxBatchThreads, n)
		}
		b.reset() // a reused batch numbers its threads afresh
	}
}

// TestMessageCacheIsBounded: a worker's cache of messages outlives its batches, so what it
// keeps must not grow with the log: no message past maxSaidBytes, none that shares the memory
// of the line it came from (a short message of a megabyte line would keep the line), and no
// more than maxSaid messages past a reset.
func TestMessageCacheIsBounded(t *testing.T) {
	b := newBatch()
	long := strings.Repeat("x", maxSaidBytes)
	for i := range 3 * maxSaid {
		b.rd.readMessage(fmt.Sprintf("NET/OFI Selected provider is efa %d %s", i, long))
		if i%100 == 99 {
			b.reset()
		}
	}
	if len(b.rd.said) != 0 {
		t.Fatalf("%d messages past %d bytes kept", len(b.rd.said), maxSaidBytes)
	}
	line := "NET/OFI Selected provider is efa, fabric is efa (found 4 nics)" + long
	msg := line[:len(line)-len(long)]
	b.rd.readMessage(msg)
	for key, said := range b.rd.said {
		kept := []string{key}
		for _, h := range said.hits {
			kept = append(kept, h.m...)
		}
		for _, s := range kept {
			if at := uintptr(unsafe.Pointer(unsafe.StringData(s))); s != "" && at >= uintptr(unsafe.Pointer(unsafe.StringData(line))) && at < uintptr(unsafe.Pointer(unsafe.StringData(line)))+uintptr(len(line)) {
				t.Fatalf("the cache keeps %q, a view of the line it came from", s)
			}
		}
	}
	for i := range 3 * maxSaid {
		b.rd.readMessage(fmt.Sprintf("NET/OFI Selected provider is efa %d", i))
		if i%100 == 99 {
			b.reset()
		}
	}
	if len(b.rd.said) > maxSaid+100 {
		t.Fatalf("%d messages kept past resets", len(b.rd.said))
	}
}
