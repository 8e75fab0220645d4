package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// tinyProgram is a build module of one small main package in a temporary directory: what Build
// does with it, it does with the harness's real programs, in a second instead of minutes.
func tinyProgram(t *testing.T) Program {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module gpucluster.test/tiny\n\ngo 1.24\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"tiny\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := filepath.Rel(RepoRoot(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvCache, t.TempDir())
	return Program{Name: "tiny", Module: rel, Packages: []string{"."}, About: "a test program"}
}

// TestDirNamesTheSources: any change to what the build reads names a new directory, so a test
// never runs a program built from other sources; nothing else does.
func TestDirNamesTheSources(t *testing.T) {
	p := tinyProgram(t)
	before, err := p.Dir()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Dir(); again != before {
		t.Fatalf("the same sources named %s, then %s", before, again)
	}
	src := filepath.Join(RepoRoot(), p.Module)
	if err := os.WriteFile(filepath.Join(src, "README.txt"), []byte("not read by the build"), 0o644); err != nil {
		t.Fatal(err)
	}
	if after, _ := p.Dir(); after != before {
		t.Errorf("a file the build does not read changed the directory")
	}
	nested := filepath.Join(src, "sub")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nested, "x.go"), []byte("package sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, _ := p.Dir()
	if after == before {
		t.Errorf("a Go file in a subdirectory of the module did not change the directory")
	}
	p.LDFlags = "-s"
	if flagged, _ := p.Dir(); flagged == after {
		t.Errorf("other build flags did not change the directory")
	}
}

// TestNotBuiltFailsAtOnceNamingTheCommand: a test that needs a program nobody built fails with
// the command that builds it, and never builds it itself.
func TestNotBuiltFailsAtOnceNamingTheCommand(t *testing.T) {
	p := tinyProgram(t)
	_, err := p.Built()
	if err == nil || !strings.Contains(err.Error(), "`make harness`") || !strings.Contains(err.Error(), p.Module) {
		t.Fatalf("Built() before a build: %v; want an error naming `make harness` and the module", err)
	}
	dir, _ := p.Dir()
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("Built() built %s", dir)
	}
	t.Setenv(EnvCache, t.TempDir())
	for _, name := range []string{"kube", "etcd", "mpi-operator", "kueue", "pulumi"} {
		if _, err := Binary(name); err == nil || !strings.Contains(err.Error(), BuildCommand) {
			t.Errorf("Binary(%q) with an empty cache: %v; want an error naming %q", name, err, BuildCommand)
		}
	}
	if _, err := Binary("no-such-program"); err == nil || strings.Contains(err.Error(), BuildCommand) {
		t.Errorf("Binary of an unknown name: %v; want an error that it is unknown", err)
	}
}

// TestBuildOnceAtATime: two builds of one program at once (two `make harness`, or CI beside a
// developer) build it once; the other waits and finds it; a third run builds nothing.
func TestBuildOnceAtATime(t *testing.T) {
	p := tinyProgram(t)
	var wg sync.WaitGroup
	results := make([][]Result, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Build(&strings.Builder{}, []Program{p}, 1)
		}()
	}
	wg.Wait()
	built := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if results[i][0].Built {
			built++
		}
	}
	if built != 1 {
		t.Fatalf("%d of 2 concurrent builds built the program; want exactly 1", built)
	}
	var log strings.Builder
	again, err := Build(&log, []Program{p}, 1)
	if err != nil || again[0].Built || !strings.Contains(log.String(), "tiny        up to date") {
		t.Fatalf("a third build: built=%v, %v, log %q; want nothing built and an up-to-date line", again[0].Built, err, log.String())
	}
	dir, err := p.Built()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, "tiny")).Output()
	if err != nil || strings.TrimSpace(string(out)) != "tiny" {
		t.Fatalf("the built program printed %q, %v", out, err)
	}
	if leftovers, _ := filepath.Glob(dir + ".tmp*"); len(leftovers) > 0 {
		t.Errorf("temporary build directories left behind: %v", leftovers)
	}
}

// TestFailedBuildLeavesNothing: a build that fails reports the compiler's output and leaves no
// directory a later test could take for a built program.
func TestFailedBuildLeavesNothing(t *testing.T) {
	p := tinyProgram(t)
	src := filepath.Join(RepoRoot(), p.Module)
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	_, err := Build(&log, []Program{p}, 1)
	if err == nil || !strings.Contains(err.Error(), "undefinedThing") || !strings.Contains(log.String(), "tiny        FAILED") {
		t.Fatalf("a build that cannot compile: %v, log %q; want the compiler's error and a FAILED line", err, log.String())
	}
	if _, err := p.Built(); err == nil {
		t.Fatal("a failed build counts as built")
	}
	dir, _ := p.Dir()
	if leftovers, _ := filepath.Glob(dir + "*"); len(leftovers) > 1 { // the lock file stays
		t.Errorf("a failed build left %v", leftovers)
	}
}
