package doctor

import "strings"

// processPrefix reads what ncclPrefix matches at the end of s, by hand: the hot path of the
// parse (every line), where the regular expression's backtracking cost a fifth of the time.
// It finds "host:pid:tid [dev]" and an optional " location:line" after it (a location holds
// no '['), and returns where the host starts, or ok false. FuzzPrefixMatchesRegexp holds it to
// ncclPrefix.
func processPrefix(s string) (start int, host, pid, tid string, ok bool) {
	// "[dev]": the last '[' (a location holds none), digits, ']'.
	o := strings.LastIndexByte(s, '[')
	if o < 1 || s[o-1] != ' ' {
		return 0, "", "", "", false
	}
	k := o + 1
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == o+1 || k >= len(s) || s[k] != ']' {
		return 0, "", "", "", false
	}
	// An optional location after it: " <anything>:<digits>" to the end.
	if rest := s[k+1:]; rest != "" {
		c := strings.LastIndexByte(rest, ':')
		if rest[0] != ' ' || c < 1 || !digits(rest[c+1:]) {
			return 0, "", "", "", false
		}
	}
	s = s[:o-1]
	// "host:pid:tid"
	c2 := strings.LastIndexByte(s, ':')
	if c2 < 0 || !digits(s[c2+1:]) {
		return 0, "", "", "", false
	}
	c1 := strings.LastIndexByte(s[:c2], ':')
	if c1 < 0 || !digits(s[c1+1:c2]) {
		return 0, "", "", "", false
	}
	h := c1
	for h > 0 && !hostStop(s[h-1]) {
		h--
	}
	if h == c1 {
		return 0, "", "", "", false
	}
	return h, s[h:c1], s[c1+1 : c2], s[c2+1:], true
}

// hostStop: the characters a host name cannot hold ([^\s:\]>|)(] in ncclPrefix; RE2's \s is [\t\n\f\r ], without \v).
func hostStop(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '\f', ':', ']', '>', '|', ')', '(':
		return true
	}
	return false
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
