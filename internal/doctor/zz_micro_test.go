package doctor

import (
	"os"
	"strings"
	"testing"
)

func zzBlock(b *testing.B) string {
	f, err := os.Open("/tmp/big1.log")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 128<<10)
	f.Read(buf)
	return string(buf)
}

func BenchmarkZZResetCode(b *testing.B) {
	s := zzBlock(b)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		resetCode(s)
	}
}

func BenchmarkZZContains0m(b *testing.B) {
	s := zzBlock(b)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		strings.Contains(s, "[0m")
	}
}

func BenchmarkZZPlainText(b *testing.B) {
	s := zzBlock(b)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		plainText(s)
	}
}

func BenchmarkZZCUDA(b *testing.B) {
	s := zzBlock(b)
	lines := strings.Split(s, "\n")
	var msgs []string
	for _, l := range lines {
		if i := strings.Index(l, "NCCL INFO comm"); i >= 0 {
			msgs = append(msgs, l[i+10:])
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, m := range msgs {
			mayBeCUDAError(m)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/msg")
}

func zzKeys() []uint64 {
	var keys []uint64
	for ch := range 32 {
		for r := range 16 {
			keys = append(keys, uint64(ch)<<48|uint64(r)<<24|uint64((r+1)%16))
		}
	}
	return keys
}

func BenchmarkZZWordSet(b *testing.B) {
	keys := zzKeys()
	var s wordSet
	for _, k := range keys {
		s.add(k)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.add(keys[i%len(keys)])
	}
}

func BenchmarkZZMapSet(b *testing.B) {
	keys := zzKeys()
	m := map[uint64]bool{}
	for _, k := range keys {
		m[k] = true
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := keys[i%len(keys)]
		if !m[k] {
			m[k] = true
		}
	}
}
