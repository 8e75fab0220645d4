package enginetest

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// DocumentedOutputs are the stack outputs docs/architecture.md lists ("Stack outputs: `a`, `b` ...").
func DocumentedOutputs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ProjectDir, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "Stack outputs:")
	if i < 0 {
		t.Fatal("docs/architecture.md lists no stack outputs (a sentence starting 'Stack outputs:')")
	}
	para := text[i:]
	if j := strings.Index(para, "\n\n"); j > 0 {
		para = para[:j]
	}
	var names []string
	for _, m := range regexp.MustCompile("`([a-zA-Z]+)`").FindAllStringSubmatch(para, -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}
