package doctor

import (
	"strings"
	"testing"
)

// TestCUDAErrorAtTheStartOfAMessage: NCCL's CUDA checks print "Cuda failure %d '%s'" as the whole
// WARN message (src/include/checks.h), so "Cuda" starts the text the expression reads; a key test
// that wants a character before the word would skip every such line.
func TestCUDAErrorAtTheStartOfAMessage(t *testing.T) {
	for _, msg := range []string{"Cuda failure 2 'out of memory'", "CUDA error 802 'system not yet initialized'", "cuda failure 700 'an illegal memory access was encountered'"} {
		if !mayBeCUDAError(msg) {
			t.Errorf("%q at the start of a message fails the key test", msg)
		}
		l, err := Parse(strings.NewReader("ip-10-0-0-1:12:12 [0] include/alloc.h:48 NCCL WARN " + msg + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.CUDAErrors) != 1 || l.CUDAErrors[0] != msg {
			t.Errorf("a WARN that is %q: CUDA errors %q", msg, l.CUDAErrors)
		}
	}
	if mayBeCUDAError("Using network AWS Libfabric") {
		t.Error("a line that names no CUDA error passes the key test")
	}
}

// FuzzCUDAKeyTestIsItsDefinition holds mayBeCUDAError, which finds spaces eight bytes at a time,
// to its definition read byte by byte: at some space, "cuda" (any case) ends before it or
// " not yet initialized" (any case) starts at it.
func FuzzCUDAKeyTestIsItsDefinition(f *testing.F) {
	for _, s := range []string{"Cuda failure 2 'out of memory'", "CUDA error 802 'system not yet initialized'", "xcuda y", "cuda", " cuda ", "a b c d e f g h i j", "1234567 cuda 1234567", "\x00\x01 \x21cuda ", "NOT YET INITIALIZED", " not yet initialize"} {
		f.Add(s)
	}
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' && (i >= 4 && strings.EqualFold(s[i-4:i], "cuda") && isASCII(s[i-4:i]) ||
				len(s)-i >= len(" not yet initialized") && strings.EqualFold(s[i:i+len(" not yet initialized")], " not yet initialized") && isASCII(s[i:i+len(" not yet initialized")])) {
				want = true
			}
		}
		if got := mayBeCUDAError(s); got != want {
			t.Fatalf("%q: mayBeCUDAError %v, its definition %v", s, got, want)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
