package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	var mu sync.Mutex
	var batches []string
	batchText = func(s string) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, s)
	}
	defer func() { batchText = nil }()
	l, err := Parse(strings.NewReader(log.String()))
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
