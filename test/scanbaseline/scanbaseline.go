// Package scanbaseline is the baseline every log reader's benchmark runs beside: a plain scan
// of the same bytes that only counts the lines holding one word (what `awk '/word/'` does), so
// a reader's speed is read against the cheapest pass over its input, in one run.
package scanbaseline

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// Run benchmarks the plain scan of text for word, failing if no line holds it.
func Run(b *testing.B, text, word string) {
	w := []byte(word)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		sc := bufio.NewScanner(strings.NewReader(text))
		n := 0
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), w) {
				n++
			}
		}
		if n == 0 {
			b.Fatalf("no line holds %q", word)
		}
	}
}
