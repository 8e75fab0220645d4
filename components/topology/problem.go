package topology

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a profile: which key, what is wrong, and how to fix it.
// Key is a path relative to the pool ("efaInterfaces", "taints[1].effect").
type Problem struct {
	Key     string `json:"key"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// ConfigError is a Problem placed in a file: the error every bad input gets.
type ConfigError struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Key is the full key as written in the stack file, e.g. "gpucluster:pools[0].efaInterfaces".
	Key     string `json:"key"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

func (e ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: %s: %s; fix: %s", loc, e.Key, e.Message, e.Fix)
}

// ConfigErrors is every error found in one input, reported together.
type ConfigErrors []ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return fmt.Sprintf("%d error(s):\n  %s", len(es), strings.Join(lines, "\n  "))
}

// sortErrors orders errors by file position so that reports are stable and read top to bottom.
func sortErrors(es ConfigErrors) {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].File != es[j].File {
			return es[i].File < es[j].File
		}
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Key < es[j].Key
	})
}

// problems collects Problems with a little less ceremony at every call site.
type problems []Problem

func (ps *problems) add(key, fix, format string, args ...any) {
	*ps = append(*ps, Problem{Key: key, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// unknownKey reports an unknown key: with a close known key, the fix is to rename it;
// otherwise the fix lists every known key.
func (r *reader) unknownKey(line int, key, name string, known []string) {
	if close := closest(name, known); close != "" {
		r.fail(line, key, fmt.Sprintf("rename it to %s", close), "unknown key (did you mean %q?)", close)
		return
	}
	r.fail(line, key, "use one of: "+strings.Join(known, ", "), "unknown key")
}

// Suggest returns " (did you mean X?)" when a known word is close to the unknown one: the
// one rule for every "did you mean" gpucluster says (stack-file keys, regions, instance types,
// and the CLI's commands, flags, stacks and profiles).
func Suggest(unknown string, known []string) string {
	if best := closest(unknown, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// closest returns the known word nearest to unknown, or "" when none is near.
func closest(unknown string, known []string) string {
	best, bestDist := "", len(unknown)/2+2
	for _, k := range known {
		if d := editDistance(strings.ToLower(unknown), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
