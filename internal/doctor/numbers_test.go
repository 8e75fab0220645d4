package doctor

import (
	"fmt"
	"math/rand/v2"
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

// TestCurrentCommsAnswersAfterEverySet: a thread's remembered answer changes when its own
// communicator or its process's is set, and only then.
func TestCurrentCommsAnswersAfterEverySet(t *testing.T) {
	c := currentComms{byKey: map[procKey]*Comm{}}
	a, b, x := newComm("a"), newComm("b"), newComm("x")
	proc, other := procKey{"h", "10", ""}, procKey{"h", "20", ""}
	t1, t2, t3, o1 := procKey{"h", "10", "11"}, procKey{"h", "10", "12"}, procKey{"h", "10", "13"}, procKey{"h", "20", "21"}
	of := func(th procKey) *Comm { return c.of(th, procKey{th.host, th.pid, ""}, threadSlot(th.pid, th.tid), "") }
	c.set(o1, other, x)
	if of(t2) != nil || of(o1) != x {
		t.Fatal("before any set of its own, a thread has no communicator")
	}
	c.set(t1, proc, a)
	if of(t1) != a || of(t2) != a || of(o1) != x {
		t.Fatalf("after set(t1, a): t1 %v t2 %v o1 %v", of(t1), of(t2), of(o1))
	}
	c.set(t3, proc, b) // the process moves on to b: t2 (no communicator of its own) follows it
	if of(t1) != a || of(t2) != b || of(t3) != b || of(o1) != x {
		t.Fatalf("after set(t3, b): t1 %v t2 %v t3 %v o1 %v", of(t1).ID, of(t2).ID, of(t3).ID, of(o1).ID)
	}
	c.set(t1, proc, x) // t1 moves on: its own answer changes, t3's stays
	if of(t1) != x || of(t2) != x || of(t3) != b || of(o1) != x {
		t.Fatalf("after set(t1, x): t1 %v t2 %v t3 %v o1 %v", of(t1).ID, of(t2).ID, of(t3).ID, of(o1).ID)
	}
}

// TestHostKnownIsTheMap: a communicator answers whether it knows a rank's host from a bit per
// rank, below hostBitRanks, and from its map above; both answer as the map does, at every
// boundary of the bits.
func TestHostKnownIsTheMap(t *testing.T) {
	c := newComm("c")
	ranks := []int{-1, 0, 1, 63, 64, 65, 127, 4095, hostBitRanks - 1, hostBitRanks, hostBitRanks + 1, 1 << 40}
	for i, set := range ranks {
		c.setHost(set, "h")
		for _, r := range append(ranks, 2, 62, 66, 4094, 4096) {
			if _, want := c.rankHost[r]; c.hostKnown(r) != want {
				t.Fatalf("after setting %v: hostKnown(%d) = %v, the map says %v", ranks[:i+1], r, !want, want)
			}
		}
	}
}

// TestCurrentCommsIsTheMap: after any sequence of sets and lookups, over more threads than
// the table has places (so threads share slots and push each other out), in processes whose
// threads set communicators of their own or borrow their process's, every answer is the one the
// maps give: the thread's communicator, else its process's.
func TestCurrentCommsIsTheMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 52))
	c := currentComms{byKey: map[procKey]*Comm{}}
	var threads []procKey
	for h := range 2 {
		for p := range 4 {
			for tid := range 40 {
				threads = append(threads, procKey{fmt.Sprintf("host-%d", h), fmt.Sprint(4100 + p), fmt.Sprint(4200 + tid)})
			}
		}
	}
	comms := []*Comm{newComm("a"), newComm("b"), newComm("c")}
	for step := range 20000 {
		th := threads[rng.IntN(len(threads))]
		proc := procKey{th.host, th.pid, ""}
		if rng.IntN(8) == 0 {
			c.set(th, proc, comms[rng.IntN(len(comms))])
			continue
		}
		want := c.byKey[th]
		if want == nil {
			want = c.byKey[proc]
		}
		key := "" // the general path's lookup, or a plain line's, which has its threadKey at hand
		if rng.IntN(2) == 0 {
			key = threadKey(th)
		}
		if got := c.of(th, proc, threadSlot(th.pid, th.tid), key); got != want {
			t.Fatalf("step %d: %v answered %v, the maps say %v", step, th, got, want)
		}
	}
}
