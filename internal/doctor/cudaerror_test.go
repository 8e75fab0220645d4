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
