package doctor

import "math"

// maxBatchThreads bounds the threads a batch numbers (half its table, so that a search ends);
// a line of any other thread is a small record without one (noThread).
const (
	maxBatchThreads = 128
	noThread        = math.MaxUint16
)

// threadAnswer is the communicator the parse found a thread's: the answer of currentComms
// while its generation is gen (a batch's lines of one thread ask once, not each line).
type threadAnswer struct {
	comm *Comm
	gen  uint64
}

// threadNo is the index of the thread whose threadKey is key among the batch's, slot its
// threadSlot; added if new, noThread past maxBatchThreads.
func (b *batch) threadNo(key string, slot int) uint16 {
	mask := len(b.threadAt) - 1
	for i := slot * 2 & mask; ; i = (i + 1) & mask {
		n := b.threadAt[i]
		if n == 0 {
			if len(b.threads) == maxBatchThreads {
				return noThread
			}
			b.threads = append(b.threads, key)
			b.threadAt[i] = uint16(len(b.threads))
			return uint16(len(b.threads) - 1)
		}
		if b.threads[n-1] == key {
			return n - 1
		}
	}
}
