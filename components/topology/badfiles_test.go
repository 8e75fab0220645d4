package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// expectation is one `# want:` (error) or `# warn:` (warning) line of a test file:
// the line and key the report must name and a fragment of its message.
type expectation struct {
	line     int
	key, msg string
}

var expectationLine = regexp.MustCompile(`^# (want|warn): (\d+) (\S+) \| (.+)$`)

func expectations(t *testing.T, data []byte) (want, warn []expectation) {
	t.Helper()
	for _, l := range strings.Split(string(data), "\n") {
		m := expectationLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		e := expectation{n, m[3], m[4]}
		if m[1] == "want" {
			want = append(want, e)
		} else {
			warn = append(warn, e)
		}
	}
	return want, warn
}

// matchReports asserts that reports are exactly the expectations: each one found (line, key,
// fragment, and a fix), none extra.
func matchReports(t *testing.T, what string, got ConfigErrors, want []expectation) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, e := range got {
			if !used[i] && e.Line == w.line && e.Key == w.key && strings.Contains(e.Message+"; "+e.Fix, w.msg) && e.Fix != "" {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no %s at line %d, key %s, saying %q; got:\n%s", what, w.line, w.key, w.msg, describe(got))
		}
	}
	for i, e := range got {
		if !used[i] {
			t.Errorf("unexpected %s: %s", what, e.Error())
		}
	}
}

func describe(es ConfigErrors) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "  %s\n", e.Error())
	}
	return b.String()
}

// Every file in testdata/bad is refused with exactly the errors its header names.
func TestBadStackFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 40 {
		t.Fatalf("%d bad stack files; the suite keeps at least 40", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := expectations(t, data)
			if len(want) == 0 {
				t.Fatal("no # want: line")
			}
			_, err = LoadStack(f, planDay)
			ces, ok := err.(ConfigErrors)
			if !ok {
				t.Fatalf("accepted or failed without file errors: %v", err)
			}
			for _, e := range ces {
				if e.File != f {
					t.Errorf("error names file %q", e.File)
				}
			}
			matchReports(t, "error", ces, want)
		})
	}
}

// Files in testdata/warn are valid; their warnings are exactly the ones their headers name.
// Files in testdata/good are valid with no warning.
func TestWarnAndGoodStackFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/warn/*.yaml")
	good, _ := filepath.Glob("testdata/good/*.yaml")
	for _, f := range append(files, good...) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			_, warn := expectations(t, data)
			spec, err := LoadStack(f, planDay)
			if err != nil {
				t.Fatal(err)
			}
			matchReports(t, "warning", spec.Warnings, warn)
		})
	}
}

func TestMergeKeysAreResolvedAsPulumiDoes(t *testing.T) {
	spec, err := LoadStack("testdata/good/merge-keys.yaml", planDay)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pools) != 2 {
		t.Fatalf("%d pools", len(spec.Pools))
	}
	a, b := spec.Pools[0], spec.Pools[1]
	if b.Name != "train-b" || b.Scaling.MaxNodes != 4 || a.Scaling.MaxNodes != 2 || b.Instance.Name != "p5.48xlarge" || b.Labels["example.com/team"] != "ml" {
		t.Errorf("merged pool: %s, %d nodes (first %d), %s, labels %v", b.Name, b.Scaling.MaxNodes, a.Scaling.MaxNodes, b.Instance.Name, b.Labels)
	}
}

func TestStackFileSizeCap(t *testing.T) {
	data := []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: dev}]\n# " + strings.Repeat("x", MaxStackFileBytes) + "\n")
	_, err := ParseStack("big.yaml", data)
	ces, ok := err.(ConfigErrors)
	if !ok || len(ces) != 1 || ces[0].Key != "(file)" || !strings.Contains(ces[0].Message, "over the 1048576-byte limit") {
		t.Errorf("%v", err)
	}
}
