// Package conventions checks rules of the source tree that no compiler enforces.
package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
const root = "../.."

// wallClockReaders are the only files of what ships that may read the wall clock: the CLI's
// clock (cmd/gpucluster/clock.go, which GPUCLUSTER_AT may start elsewhere) and the Pulumi
// program's entry point (infra/main.go). Each reads it once per command or per `pulumi up` and
// passes the instant down (topology.DeriveStack), so a plan and the up that follows judge a stack
// on the same instant, and a test that sets the instant decides every date the code sees.
var wallClockReaders = []string{"cmd/gpucluster/clock.go", "infra/main.go"}

// machinery is the test harness and tier (test/): it measures its own deadlines and gives the
// certificates it makes a lifetime from its own run; it judges no date of a stack.
var machinery = []string{"test"}

// wallClockFuncs read the wall clock: Now itself, and Since and Until, which call it.
var wallClockFuncs = []string{"Now", "Since", "Until"}

// TestOnlyTheEntryPointsReadTheWallClock: no Go file that ships, outside wallClockReaders, names
// time.Now, time.Since or time.Until (called or passed as a value). A new read elsewhere is a
// time bomb: a date judged on the day the code runs, which no test's instant reaches.
func TestOnlyTheEntryPointsReadTheWallClock(t *testing.T) {
	fset := token.NewFileSet()
	shippedGoFiles(t, func(rel string) bool { return slices.Contains(machinery, rel) }, func(rel, path string) error {
		if slices.Contains(wallClockReaders, rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, r := range wallClockReads(fset, f) {
			t.Errorf("%s:%d: %s reads the wall clock; take the instant as a parameter from the caller (cmd/gpucluster's now, infra/main.go's time.Now) instead", rel, r.line, r.call)
		}
		return nil
	})
	for _, f := range wallClockReaders {
		data, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s, a wall-clock reader: %v", f, err)
		}
		if len(wallClockReads(fset, data)) == 0 {
			t.Errorf("%s is named a wall-clock reader but reads no clock: take it off wallClockReaders", f)
		}
	}
}

// TestWallClockReadsAreFound: the scan finds a call, a method value, an aliased import and
// Since/Until, and passes what only looks alike.
func TestWallClockReadsAreFound(t *testing.T) {
	src := `package p
import (
	"time"
	clock "time"
)
type x struct{ Now func() time.Time }
func f(v x, at time.Time) {
	_ = time.Now()
	g := time.Now
	_ = clock.Since(at)
	_ = time.Until(at)
	_ = v.Now()
	_ = at.Add(time.Hour)
	_ = g
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range wallClockReads(fset, f) {
		got = append(got, strconv.Itoa(r.line)+" "+r.call)
	}
	want := []string{"8 time.Now", "9 time.Now", "10 clock.Since", "11 time.Until"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}

type wallClockRead struct {
	line int
	call string
}

// wallClockReads lists every selector of a wallClockFuncs name on an import of "time" in f.
func wallClockReads(fset *token.FileSet, f *ast.File) []wallClockRead {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			name := "time"
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = true
		}
	}
	var reads []wallClockRead
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] && slices.Contains(wallClockFuncs, sel.Sel.Name) {
			reads = append(reads, wallClockRead{line: fset.Position(sel.Pos()).Line, call: id.Name + "." + sel.Sel.Name})
		}
		return true
	})
	return reads
}

// shippedGoFiles calls visit with every Go file of the repository that is not a test file
// (_test.go), testdata, a hidden or node_modules directory, the plan's review/ output, or under
// a directory skip names (by its path from the root), and fails the test when the walk reads
// too few files to have covered the tree.
func shippedGoFiles(t *testing.T, skip func(rel string) bool, visit func(rel, path string) error) {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if name := e.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "review" || skip(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		checked++
		return visit(rel, path)
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files: the walk from %s missed the tree", checked, root)
	}
}
