package doctor

// The hottest byte tests read eight bytes as one word and mark, in one step, the bytes they
// look for.
const lowBits, highBits = 0x0101010101010101, 0x8080808080808080

// bytesAre marks the bytes of x equal to b by their high bit. A byte is b where x^b is zero,
// and a zero byte is one where subtracting one borrows into its high bit while its own is
// clear. A borrow can mark the byte above a true one, never a byte without one: whether any is
// marked is exact, and a mark's byte is checked where its place matters.
func bytesAre(x uint64, b byte) uint64 {
	y := x ^ lowBits*uint64(b)
	return (y - lowBits) &^ y & highBits
}
