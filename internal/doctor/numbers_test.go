package doctor

import (
	"strconv"
	"testing"
)

// FuzzAtoiIsStrconv holds atoi's hand-read digits to strconv.Atoi's value, for any text.
func FuzzAtoiIsStrconv(f *testing.F) {
	for _, s := range []string{"0", "7", "15", "123456789", "1234567890", "-3", "+3", "", "1a", "٣", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := strconv.Atoi(s)
		if got := atoi(s); got != want {
			t.Fatalf("atoi(%q) = %d, strconv.Atoi %d", s, got, want)
		}
	})
}

// TestFirstSeenKeepsWideNumbersApart: a connection whose numbers do not fit one word is not
// taken for another whose packed word it would share.
func TestFirstSeenKeepsWideNumbersApart(t *testing.T) {
	c := newComm("x")
	for _, k := range [][3]int{{1, 0, 0}, {0, 1 << 24, 0}, {0, 0, 1 << 24}, {1 << 16, 0, 0}, {-1, 0, 0}, {0, 0, 0}} {
		if !c.firstSeen(k[0], k[1], k[2]) {
			t.Errorf("%v: taken for a connection already seen", k)
		}
		if c.firstSeen(k[0], k[1], k[2]) {
			t.Errorf("%v: new the second time", k)
		}
	}
	o := newComm("")
	o.firstSeen(0, 1<<24, 1)
	c.absorb(o)
	if c.firstSeen(0, 1<<24, 1) {
		t.Error("a wide connection was lost when its pending communicator was absorbed")
	}
}
