package plan

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tree lists every file below dir with its content: what a refused write must leave unchanged.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel+"/"] = ""
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: %d entries before, %d after", what, len(before), len(after))
	}
	for k, v := range before {
		if got, ok := after[k]; !ok || got != v {
			t.Errorf("%s: %s changed or removed", what, k)
		}
	}
}

var bundleV1 = map[string][]byte{"plan.json": []byte("{}\n"), "REVIEW.md": []byte("v1\n"), "manifests/a.yaml": []byte("a: 1\n"), "manifests/old.yaml": []byte("old\n")}
var bundleV2 = map[string][]byte{"plan.json": []byte("{\"v\":2}\n"), "REVIEW.md": []byte("v2\n"), "manifests/a.yaml": []byte("a: 2\n")}

// project lays out a checkout: root/Pulumi.yaml, root/stacks/Pulumi.dev.yaml, root/.git/HEAD.
func project(t *testing.T) (root string, protect Protected) {
	t.Helper()
	root = t.TempDir()
	for path, content := range map[string]string{"Pulumi.yaml": "name: x\n", "stacks/Pulumi.dev.yaml": "config: {}\n", ".git/HEAD": "ref\n", "README.md": "mine\n"} {
		full := filepath.Join(root, path)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, Protected{StackFile: filepath.Join(root, "stacks/Pulumi.dev.yaml"), ProjectDir: root, WorkDir: root}
}

func TestBundleGoesToANewOrEmptyDirectory(t *testing.T) {
	root, protect := project(t)
	for _, dir := range []string{filepath.Join(root, "review", "dev"), filepath.Join(root, "empty")} {
		os.Mkdir(filepath.Join(root, "empty"), 0o755)
		if err := writeFiles(bundleV1, dir, protect); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		got := tree(t, dir)
		if got["REVIEW.md"] != "v1\n" || got["manifests/a.yaml"] != "a: 1\n" || !strings.Contains(got[MarkerFile], "manifests/old.yaml\n") {
			t.Errorf("%s: %v", dir, got)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(root, "review", ".*")); len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}

func TestBundleReplacesAPreviousBundleWhole(t *testing.T) {
	root, protect := project(t)
	dir := filepath.Join(root, "review", "dev")
	if err := writeFiles(bundleV1, dir, protect); err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(bundleV2, dir, protect); err != nil {
		t.Fatal(err)
	}
	got := tree(t, dir)
	if got["REVIEW.md"] != "v2\n" || got["manifests/a.yaml"] != "a: 2\n" {
		t.Errorf("not replaced: %v", got)
	}
	if _, ok := got["manifests/old.yaml"]; ok {
		t.Error("a file of the old bundle survived the new one")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(root, "review", ".*")); len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
	// The fallback used where no atomic exchange exists gives the same result.
	tmp := filepath.Join(root, "review", "new")
	os.MkdirAll(tmp, 0o755)
	os.WriteFile(filepath.Join(tmp, "REVIEW.md"), []byte("v3\n"), 0o644)
	if err := swapByRenames(tmp, dir); err != nil {
		t.Fatal(err)
	}
	if tree(t, dir)["REVIEW.md"] != "v3\n" || tree(t, tmp)["REVIEW.md"] != "v2\n" {
		t.Error("swapByRenames did not exchange the bundles")
	}
}

// Every directory a user could name that is not the tool's: refused, and not one byte changed.
func TestBundleNeverTouchesWhatItDidNotWrite(t *testing.T) {
	root, protect := project(t)
	os.WriteFile(filepath.Join(root, "afile"), []byte("keep\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "notes"), 0o755)
	os.WriteFile(filepath.Join(root, "notes", "todo.md"), []byte("keep\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "ro"), 0o755)
	os.WriteFile(filepath.Join(root, "ro", "data"), []byte("keep\n"), 0o444)
	os.Chmod(filepath.Join(root, "ro"), 0o555)
	defer os.Chmod(filepath.Join(root, "ro"), 0o755)
	os.Symlink(filepath.Join(root, "notes"), filepath.Join(root, "link"))
	os.Symlink(root, filepath.Join(root, "notes", "up"))
	// A previous bundle to which the user added a file of their own.
	mixed := filepath.Join(root, "review", "mixed")
	if err := writeFiles(bundleV1, mixed, protect); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mixed, "my-notes.md"), []byte("keep\n"), 0o644)
	// A directory holding a marker-like file that gpucluster did not write.
	fake := filepath.Join(root, "fake")
	os.MkdirAll(fake, 0o755)
	os.WriteFile(filepath.Join(fake, MarkerFile), []byte("not ours\nplan.json\n"), 0o644)
	os.WriteFile(filepath.Join(fake, "plan.json"), []byte("keep\n"), 0o644)

	cases := []struct{ dir, why string }{
		{root, "the stack file"},
		{filepath.Join(root, "."), "the stack file"},
		{filepath.Join(root, "stacks"), "the stack file"},
		{filepath.Join(root, "stacks", ".."), "the stack file"},
		{filepath.Dir(root), "the stack file"},
		{"/", "the stack file"},
		{filepath.Join(root, "notes", "up"), "the stack file"}, // a link back to the project
		{filepath.Join(root, "afile"), "is a file"},
		{filepath.Join(root, "notes"), "holds no " + MarkerFile},
		{filepath.Join(root, "ro"), "holds no " + MarkerFile},
		{filepath.Join(root, "link"), "symbolic link"},
		{mixed, "my-notes.md"},
		{fake, "holds no " + MarkerFile},
	}
	before := tree(t, root)
	for _, c := range cases {
		err := writeFiles(bundleV2, c.dir, protect)
		var oe *OutputError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "fix:") {
			t.Errorf("%s: %v, want a refusal naming %q", c.dir, err, c.why)
		}
	}
	sameTree(t, "project", before, tree(t, root))

	// The working directory is protected on its own, even outside the project.
	elsewhere := t.TempDir()
	sub := filepath.Join(elsewhere, "work")
	os.MkdirAll(sub, 0o755)
	err := writeFiles(bundleV2, elsewhere, Protected{WorkDir: sub})
	if err == nil || !strings.Contains(err.Error(), "the current directory") {
		t.Errorf("a parent of the working directory: %v", err)
	}
}

// A run that fails after writing the new bundle, before swapping it in, leaves the old one
// whole and cleans up after itself.
func TestBundleFailureBeforeTheSwapKeepsTheOldBundle(t *testing.T) {
	root, protect := project(t)
	dir := filepath.Join(root, "review", "dev")
	if err := writeFiles(bundleV1, dir, protect); err != nil {
		t.Fatal(err)
	}
	old := tree(t, dir)
	beforeSwap = func(string) error { return errors.New("disk full") }
	defer func() { beforeSwap = func(string) error { return nil } }()
	if err := writeFiles(bundleV2, dir, protect); err == nil {
		t.Fatal("the injected failure was not returned")
	}
	sameTree(t, "old bundle", old, tree(t, dir))
	if leftovers, _ := filepath.Glob(filepath.Join(root, "review", ".*")); len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}

// A process killed between the write and the swap (no deferred clean-up runs) leaves the old
// bundle whole; the next run removes the temporary bundle the killed one left.
func TestBundleCrashBeforeTheSwapKeepsTheOldBundle(t *testing.T) {
	if dir := os.Getenv("GPUCLUSTER_TEST_CRASH_DIR"); dir != "" {
		beforeSwap = func(string) error { os.Exit(3); return nil }
		_ = writeFiles(bundleV2, dir, Protected{})
		t.Fatal("the crash hook did not run")
	}
	root, protect := project(t)
	dir := filepath.Join(root, "review", "dev")
	if err := writeFiles(bundleV1, dir, protect); err != nil {
		t.Fatal(err)
	}
	old := tree(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBundleCrashBeforeTheSwapKeepsTheOldBundle$")
	cmd.Env = append(os.Environ(), "GPUCLUSTER_TEST_CRASH_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("crashing child: %v\n%s", err, out)
	}
	sameTree(t, "old bundle after a crash", old, tree(t, dir))
	leftovers, _ := filepath.Glob(filepath.Join(root, "review", ".*"))
	if len(leftovers) != 1 {
		t.Fatalf("the crash should leave its temporary bundle, found %v", leftovers)
	}
	if err := writeFiles(bundleV2, dir, protect); err != nil {
		t.Fatal(err)
	}
	if after, _ := filepath.Glob(filepath.Join(root, "review", ".*")); len(after) > 0 {
		t.Errorf("the next run left %v", after)
	}
	// A foreign directory that merely looks like a temporary bundle is left alone.
	foreign := filepath.Join(root, "review", tempPrefix("dev")+"mine")
	os.MkdirAll(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "data"), []byte("keep\n"), 0o644)
	if err := writeFiles(bundleV1, dir, protect); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	entries, _ := os.ReadDir(filepath.Join(root, "review"))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 2 || tree(t, foreign)["data"] != "keep\n" {
		t.Errorf("review/ holds %v", names)
	}
}

// withHook runs the write with a hook between writing the new bundle and swapping it in: the
// moment a user's file can appear where the check saw none.
func withHook(t *testing.T, hook func(tmp string)) {
	t.Helper()
	beforeSwap = func(tmp string) error { hook(tmp); return nil }
	t.Cleanup(func() { beforeSwap = func(string) error { return nil } })
}

// A file written into the previous bundle after the check is the user's: the swap is undone
// and the file kept. (Replacing the atomic exchange with remove-then-rename loses it.)
func TestBundleKeepsAFileThatAppearedInTheOldBundle(t *testing.T) {
	root, protect := project(t)
	dir := filepath.Join(root, "review", "dev")
	if err := writeFiles(bundleV1, dir, protect); err != nil {
		t.Fatal(err)
	}
	withHook(t, func(string) { os.WriteFile(filepath.Join(dir, "notes.md"), []byte("mine\n"), 0o644) })
	err := writeFiles(bundleV2, dir, protect)
	var refused *OutputError
	if !errors.As(err, &refused) {
		t.Fatalf("the write went on: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "mine\n" {
		t.Error("the user's file is gone")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "REVIEW.md")); string(b) != "v1\n" {
		t.Errorf("the old bundle was not swapped back: REVIEW.md %q", b)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(root, "review", ".*")); len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}

// An empty directory a file appeared in after the check is not empty any more: the write fails
// and the file stays. (RemoveAll instead of Remove loses it.)
func TestBundleKeepsAFileThatAppearedInAnEmptyDirectory(t *testing.T) {
	root, protect := project(t)
	dir := filepath.Join(root, "review", "dev")
	os.MkdirAll(dir, 0o755)
	withHook(t, func(string) { os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("keep\n"), 0o644) })
	if err := writeFiles(bundleV2, dir, protect); err == nil {
		t.Fatal("the write went on")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mine.txt")); string(b) != "keep\n" {
		t.Error("the user's file is gone")
	}
}

// A leftover temporary bundle that also holds a user's file is not gpucluster's to remove.
func TestBundleKeepsALeftoverTempHoldingAUsersFile(t *testing.T) {
	root, protect := project(t)
	dir := filepath.Join(root, "review", "dev")
	stale := filepath.Join(root, "review", tempPrefix("dev")+"123")
	os.MkdirAll(stale, 0o755)
	os.WriteFile(filepath.Join(stale, MarkerFile), markerContent([]string{"REVIEW.md"}), 0o644)
	os.WriteFile(filepath.Join(stale, "REVIEW.md"), []byte("v0\n"), 0o644)
	os.WriteFile(filepath.Join(stale, "mine.txt"), []byte("keep\n"), 0o644)
	if err := writeFiles(bundleV1, dir, protect); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(stale, "mine.txt")); string(b) != "keep\n" {
		t.Error("the leftover holding the user's file was removed")
	}
	// One that holds only what its marker names is removed.
	os.Remove(filepath.Join(stale, "mine.txt"))
	if err := writeFiles(bundleV2, dir, protect); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("gpucluster's own leftover was kept")
	}
}

// A bundle directory is one stack's: another stack's plan never replaces it, and nothing is
// written inside a bundle (it is replaced whole).
func TestBundleIsOneStacksAndNothingGoesInsideIt(t *testing.T) {
	root, protect := project(t)
	p5 := filepath.Join(root, "review", "p5-efa")
	p5Protect := protect
	p5Protect.Stack = "p5-efa"
	files := map[string][]byte{"plan.json": []byte(`{"stack": "p5-efa"}` + "\n"), "REVIEW.md": []byte("p5\n")}
	if err := writeFiles(files, p5, p5Protect); err != nil {
		t.Fatal(err)
	}
	before := tree(t, p5)
	protect.Stack = "dev"
	for _, dir := range []string{p5, filepath.Join(p5, "dev"), filepath.Join(p5, "manifests", "dev")} {
		err := writeFiles(bundleV2, dir, protect)
		var refused *OutputError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "p5-efa") {
			t.Errorf("%s: %v", dir, err)
		}
	}
	sameTree(t, "the p5-efa bundle", before, tree(t, p5))
}
