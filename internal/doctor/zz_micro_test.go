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

func BenchmarkZZCommLine(b *testing.B) {
	lines := []string{
		"[1,0]<stdout>:train-worker-0:4101:4111 [0] NCCL INFO comm 0x55d0c0000 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 101c0 commId 0x6c3f1a2b9d8e7f01 - Init START",
		"[1,0]<stdout>:train-worker-0:4101:4111 [0] NCCL INFO comm 0x55d0c0000 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
		"train-worker-0:4101:4111 [0] NCCL INFO comm 0x55d0c0000 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 101c0 commId 0x6c3f1a2b9d8e7f01 localSize 8 used 1234 bytes - Init COMPLETE",
	}
	rd := reading{placed: map[string]*placed{}, said: map[string]readMessageResult{}, classed: map[string]string{}}
	var recs []record
	for b.Loop() {
		for _, l := range lines {
			recs = rd.readLine(strings.Clone(l), 0, true, recs[:0])
			rd.hits = rd.hits[:0]
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

func BenchmarkZZCommLiteral(b *testing.B) {
	msg := "comm 0x55d0c0000 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 101c0 commId 0x6c3f1a2b9d8e7f01 - Init START"
	for b.Loop() {
		msgLiterals.in(msg)
	}
}

func BenchmarkZZCommMark(b *testing.B) {
	l := "[1,0]<stdout>:train-worker-0:4101:4111 [0] NCCL INFO comm 0x55d0c0000 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 101c0 commId 0x6c3f1a2b9d8e7f01 - Init START"
	for b.Loop() {
		m := markNCCL(l)
		splitMarked(l, m)
	}
}

func BenchmarkZZCommInit(b *testing.B) {
	msg := "comm 0x55d0c0000 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 101c0 commId 0x6c3f1a2b9d8e7f01 - Init START"
	for b.Loop() {
		readCommInit(msg)
		readOldComm(msg)
	}
}

func zzHoldsNCCL(s string) bool {
	for i := strings.IndexByte(s, 'N'); i >= 0; {
		if strings.HasPrefix(s[i:], "NCCL ") {
			return true
		}
		j := strings.IndexByte(s[i+1:], 'N')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

var zzRests = []string{"31/0 : 3[3] -> 4[4] via P2P/CUMEM/read", "01/0 : 3[3] -> 11[3] [receive] via NET/Libfabric/3/GDRDMA", "25/0 : 9[1] -> 10[2] via P2P/CUMEM/read", "04/0 : 8[0] -> 0[0] [send] via NET/Libfabric/0/GDRDMA"}
var zzSink bool

func BenchmarkZZContainsNCCL(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		zzSink = strings.Contains(zzRests[i&3], "NCCL ")
	}
}

func BenchmarkZZHoldsNCCL(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		zzSink = zzHoldsNCCL(zzRests[i&3])
	}
}
