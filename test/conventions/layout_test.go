package conventions

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// modulePath is this repository's Go module.
const modulePath = "github.com/gpucluster/gpucluster"

// TestNothingThatShipsImportsTheTests: no Go file outside test/, other than a _test.go file, imports
// a package under test/. test/ holds the harness, the Kubernetes and AWS stand-ins and the
// real-engine tier (test/README.md); what the CLI and the Pulumi program ship must build without
// them, so the arrow points one way: the tests import the product, never the reverse.
func TestNothingThatShipsImportsTheTests(t *testing.T) {
	fset := token.NewFileSet()
	shippedGoFiles(t, func(rel string) bool { return rel == "test" }, func(rel, path string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if imp == modulePath+"/test" || strings.HasPrefix(imp, modulePath+"/test/") {
				t.Errorf("%s:%d imports %s: what ships may not import the test harness (test/); move what both need out of test/, or the import into a _test.go file",
					rel, fset.Position(spec.Pos()).Line, imp)
			}
		}
		return nil
	})
}
