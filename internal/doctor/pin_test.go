package doctor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// TestNothingKeptPointsIntoABatch: connections are read from their batch's string (a copy of
// half a megabyte of the log), so a fact the parse keeps from one would hold the whole batch
// in memory, and a long log's memory would grow with it. Every string the parsed log holds,
// however deep, must point outside every batch's string. The log is every fixture, whose
// connections include excerpts without Init lines (kept threads) and ranks that only a
// connection names (kept hosts); the batches are kept alive by the test, so no later string
// can be given a freed batch's memory.
func TestNothingKeptPointsIntoABatch(t *testing.T) {
	log := everyFixture(t)
	var mu sync.Mutex
	var batches []string
	batchText = func(s string) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, s)
	}
	defer func() { batchText = nil }()
	l, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	report := Diagnose(l, nil, nil, "")
	if len(batches) < 2 {
		t.Fatalf("%d batches: the log should span several", len(batches))
	}
	views := 0
	inBatch := func(s string) bool {
		if s == "" {
			return false
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		for _, b := range batches {
			start := uintptr(unsafe.Pointer(unsafe.StringData(b)))
			if p >= start && p < start+uintptr(len(b)) {
				return true
			}
		}
		return false
	}
	for _, root := range []struct {
		name string
		v    any
	}{{"log", l}, {"report", report}} {
		walkStrings(reflect.ValueOf(root.v), root.name, map[uintptr]bool{}, func(path, s string) {
			if inBatch(s) {
				views++
				if views <= 5 {
					t.Errorf("%s = %q points into a batch's string", path, s)
				}
			}
		})
	}
	if views > 5 {
		t.Errorf("and %d more", views-5)
	}
}

// walkStrings calls f with every string reachable from v, unexported fields included.
func walkStrings(v reflect.Value, path string, seen map[uintptr]bool, f func(path, s string)) {
	switch v.Kind() {
	case reflect.String:
		f(path, v.String())
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		walkStrings(v.Elem(), path, seen, f)
	case reflect.Interface:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, seen, f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			walkStrings(v.Field(i), path+"."+v.Type().Field(i).Name, seen, f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStrings(v.Index(i), path+"[]", seen, f)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkStrings(it.Key(), path+"{key}", seen, f)
			walkStrings(it.Value(), path+"{}", seen, f)
		}
	}
}

// TestReusedBuffersChangeNothing: a batch's buffer is read into again once the batch is
// applied, so a string kept from it would change under the parse (TestNothingKeptPointsIntoABatch
// holds the log's; this one, the parse's own caches). Every fixture, read in small blocks and
// followed by enough application output to read into every buffer again, gives the report it
// gives read in one block, which reuses nothing; and most buffers are read into again.
func TestReusedBuffersChangeNothing(t *testing.T) {
	const largest = 64 << 10
	inFlight := 3*runtime.GOMAXPROCS(0) + 1
	log := everyFixture(t) + strings.Repeat("application output, not NCCL's\n", 2*inFlight*largest/31)
	defer func(size int) { batchBytes = size }(batchBytes)
	batchBytes = len(log) + 1
	want := reportOf(t, log)
	var mu sync.Mutex
	reused := 0
	reusing = func() {
		mu.Lock()
		defer mu.Unlock()
		reused++
	}
	defer func() { reusing = nil }()
	for _, size := range []int{997, 4096, largest} {
		batchBytes, reused = size, 0
		if got := reportOf(t, log); got != want {
			t.Errorf("in blocks of %d bytes, reused %d times:\n%s\nin one block:\n%s", size, reused, got, want)
		}
		// Every block after the first inFlight reuses a buffer, but where a line longer than a
		// block is carried into it.
		if reused < (len(log)/size-inFlight)*3/4 {
			t.Errorf("in blocks of %d bytes: %d buffers read into again, want most of the %d blocks after the first %d", size, reused, len(log)/size, inFlight)
		}
	}
}

// reportOf is the report of log, every line number in it.
func reportOf(t *testing.T, log string) string {
	t.Helper()
	l, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(Diagnose(l, nil, nil, ""), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// everyFixture is every fixture, one after another, and an excerpt of our own.
func everyFixture(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob("testdata/corpus/*.log")
	more, _ := filepath.Glob("testdata/*.log")
	var log strings.Builder
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		log.Write(data)
		log.WriteString("\n")
	}
	// An excerpt of our own: connections of a thread no Init line names, on a new transport,
	// whose ranks (numbered past every fixture's) only the connections place on a host.
	for ch := range 4 {
		fmt.Fprintf(&log, "excerpt-host-7:4242:4250 [3] NCCL INFO Channel %02d/0 : 4093[3] -> 4094[3] [send] via NET/Socket/%d\n", ch, ch)
	}
	log.WriteString("excerpt-host-7:4242:4250 [3] NCCL INFO Channel 04/0 : 4093[3] -> 4095[4] via SHM\n") // a transport without a device number is kept as logged
	return log.String()
}
