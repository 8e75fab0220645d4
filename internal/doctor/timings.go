package doctor

import "strings"

// readInitTimings reads what timingsRe matches, by hand: every rank prints its communicator's
// "Init timings - ncclCommInitRank: rank 8 nranks 16 total 3.41 (kernels 0.21, …, bootstrap
// 1.90, …)", each its own text, and the expression's lazy stars backtracked over the whole line
// for each. It returns timingsRe's submatches (whole, total, bootstrap), nil where it does not
// match. FuzzPrefixStartIsTheWholeMatch holds it to timingsRe.
func readInitTimings(s string) []string { return firstMatchFrom(s, "Init timings", initTimingsAt) }

// initTimingsAt matches timingsRe at s[i:], which starts "Init timings". No part of the
// expression crosses a newline; the first " total " whose number is followed by " (" is the
// one the lazy star stops at, and the first "bootstrap " with a number after it then ends the
// match (a later " total " could only look at less of the line).
func initTimingsAt(s string, i int) []string {
	line := s[i:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	for from := len("Init timings"); ; {
		t := strings.Index(line[from:], " total ")
		if t < 0 {
			return nil
		}
		p := from + t + len(" total ")
		q := numberEnd(line, p)
		if q == p || !strings.HasPrefix(line[q:], " (") {
			from += t + 1
			continue
		}
		for from = q + len(" ("); ; {
			b := strings.Index(line[from:], "bootstrap ")
			if b < 0 {
				return nil
			}
			r := from + b + len("bootstrap ")
			if e := numberEnd(line, r); e > r {
				return []string{line[:e], line[p:q], line[r:e]}
			}
			from += b + 1
		}
	}
}

// numberEnd is where the run of [0-9.] at s[i:] ends.
func numberEnd(s string, i int) int {
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return i
}
