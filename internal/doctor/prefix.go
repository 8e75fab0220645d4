package doctor

import "strings"

// processPrefix reads what ncclPrefix matches at the end of s, by hand: the hot path of the
// parse (every line), where the regular expression's backtracking cost a fifth of the time.
// It finds "host:pid:tid [dev]" and an optional " location:line" after it (a location holds
// no '['), and returns where the host starts, or ok false. FuzzPrefixMatchesRegexp holds it to
// ncclPrefix.
func processPrefix(s string) (start int, host, pid, tid string, ok bool) {
	// "[dev]": the last '[' (a location holds none), digits, ']'. Most prefixes end with it,
	// so that the last '[' is the one before the digits that end s: read back from the end,
	// where a search from the end would test every byte through a call.
	o := len(s) - 2
	for o >= 0 && s[o] >= '0' && s[o] <= '9' {
		o--
	}
	if o < 0 || s[len(s)-1] != ']' || s[o] != '[' {
		o = strings.LastIndexByte(s, '[')
	}
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
	// An optional location after it: " <anything>:<digits>" to the end, or followed by
	// " (<function>)" (NCCL 2.30.7's WARN lines).
	if rest := s[k+1:]; rest != "" && !isLocation(rest) {
		return 0, "", "", "", false
	}
	s = s[:o-1]
	// "host:pid:tid", read back from its end: the tid's digits and the ':' before them, then
	// the pid's (what the last two ':' and digits tests on the text between them find).
	c2 := digitsBefore(s, len(s)) - 1
	if c2 < 0 || c2 == len(s)-1 || s[c2] != ':' {
		return 0, "", "", "", false
	}
	c1 := digitsBefore(s, c2) - 1
	if c1 < 0 || c1 == c2-1 || s[c1] != ':' {
		return 0, "", "", "", false
	}
	h := c1
	for h > 0 && !hostStop(s[h-1]) {
		h--
	}
	if h == c1 {
		// A placeholder for the host, as people redact it: "<cluster_name>", "[hostname]".
		if h = placeholderStart(s[:c1]); h < 0 {
			return 0, "", "", "", false
		}
	}
	return h, s[h:c1], s[c1+1 : c2], s[c2+1:], true
}

// digitsBefore is where the run of digits that ends at s[end] starts (end if none).
func digitsBefore(s string, end int) int {
	i := end
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	return i
}

// isLocation says whether rest is " <location>:<digits>", optionally followed by " (<function>)"
// (a function name holds no space or parenthesis). rest holds no '['.
func isLocation(rest string) bool {
	plain := func(r string) bool {
		c := strings.LastIndexByte(r, ':')
		return r[0] == ' ' && c >= 1 && digits(r[c+1:])
	}
	if strings.HasSuffix(rest, ")") {
		if j := strings.LastIndex(rest, " ("); j > 0 && !strings.ContainsAny(rest[j+2:len(rest)-1], "() \t\n\f\r") && plain(rest[:j]) {
			return true
		}
	}
	return plain(rest)
}

// placeholderStart is where a placeholder host ending s starts ("<x>" or "[x]", x without
// whitespace, ':' or its own brackets), -1 if s ends with none.
func placeholderStart(s string) int {
	if len(s) < 3 {
		return -1
	}
	open, end := byte('<'), s[len(s)-1]
	switch end {
	case '>':
	case ']':
		open = '['
	default:
		return -1
	}
	i := strings.LastIndexByte(s[:len(s)-1], open)
	if i < 0 || i == len(s)-2 {
		return -1
	}
	for _, c := range []byte(s[i+1 : len(s)-1]) {
		switch c {
		case ' ', '\t', '\n', '\f', '\r', ':', open, end:
			return -1
		}
	}
	return i
}

// looseProcess reads what stands before " NCCL INFO|WARN" when processPrefix does not: nothing
// at all (a launcher or a paste stripped the prefix: "NCCL INFO Using network IBext_v8",
// NVIDIA/nccl#1584), or only the device, "[0] NCCL INFO …" (NVIDIA/nccl#1612, #2094), with a
// WARN's location after it and possibly a bare host before ("gpu-server320 [5]
// misc/socket.cc:46", NVIDIA/nccl#1920). The process is unknown: host, pid and tid are empty
// but for such a host.
func looseProcess(s string) (host string, ok bool) {
	t := strings.TrimRight(s, " ")
	if t == "" {
		return "", true
	}
	o := strings.LastIndexByte(t, '[')
	if o < 0 {
		// A WARN's location alone, no process and no device ("nccl_net_ofi_domain_get_ep:969
		// NCCL WARN NET/OFI …", aws/aws-ofi-nccl#889's title).
		return "", !strings.ContainsAny(t, " \t") && isLocation(" "+t)
	}
	k := o + 1
	for k < len(t) && t[k] >= '0' && t[k] <= '9' {
		k++
	}
	if k == o+1 || k >= len(t) || t[k] != ']' {
		return "", false
	}
	if rest := t[k+1:]; rest != "" && !isLocation(rest) {
		return "", false
	}
	before := strings.TrimRight(t[:o], " ")
	if i := strings.LastIndexAny(before, " \t|>]"); i >= 0 {
		before = before[i+1:]
	}
	if strings.ContainsAny(before, ":[(") {
		before = ""
	}
	return before, true
}

// hostStop: the characters a host name cannot hold ([^\s:\]>|)(] in ncclPrefix; RE2's \s is [\t\n\f\r ], without \v).
func hostStop(b byte) bool { return hostStops[b] }

// hostStops is hostStop as a table: one load per byte of every line's host, where a switch
// over the eleven cost a tenth of the parse.
var hostStops = func() (t [256]bool) {
	for _, c := range " \t\n\r\f:]>|)(" {
		t[c] = true
	}
	return t
}()

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

// unframed reads the records that carry neither NCCL's "NCCL INFO|WARN" nor anything before
// it that looseProcess takes, and returns ok false for any other line:
//
//   - NCCL 2.0 to 2.2, closed source, printed the level without the word NCCL:
//     "host:pid:tid [1] INFO NET : Using interface eno1:…", "host:pid:tid [0]
//     include/socket.h:185 WARN Call to connect failed : …" (horovod/horovod#67, #489,
//     NVIDIA/nccl#111; 2.3.5's src/include/debug.h is the first to print "NCCL INFO"). The whole
//     process prefix is required, so a sentence holding "INFO" is not a record.
//   - aws-ofi-nccl's lines without NCCL's prefix: the plugin's own test binaries log "INFO:
//     Function: ofi_init Line: 757: NET/OFI Selected Provider is efa" and "WARN: Function: … Line:
//     …: NET/OFI …" (aws/aws-ofi-nccl#67; its tests/functional logger), and a paste may keep
//     only the plugin's words, which always start "NET/OFI " (include/nccl_ofi_log.h).
func unframed(line string) (host, pid, tid, level, msg string, ok bool) {
	if i := strings.Index(line, "NET/OFI "); i >= 0 {
		before := strings.TrimSpace(line[:i])
		switch {
		case before == "":
			return "", "", "", "INFO", line[i:], true
		case strings.HasSuffix(before, ":") && strings.Contains(before, "Function: "):
			f := strings.LastIndex(before, "Function: ")
			if k := strings.LastIndex(before[:f], "WARN: "); k >= 0 && k+len("WARN: ") == f {
				return "", "", "", "WARN", line[i:], true
			}
			if k := strings.LastIndex(before[:f], "INFO: "); k >= 0 && k+len("INFO: ") == f {
				return "", "", "", "INFO", line[i:], true
			}
		}
	}
	for _, lv := range []string{" INFO ", " WARN "} {
		i := strings.Index(line, lv)
		if i < 0 {
			continue
		}
		if _, h, p, t, framed := processPrefix(line[:i]); framed {
			return h, p, t, lv[1:5], line[i+len(lv):], true
		}
	}
	return "", "", "", "", "", false
}
