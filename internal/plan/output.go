package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MarkerFile is written into every bundle. It lists every file of the bundle, so that a later
// plan can tell a directory it wrote (and may replace) from anything else (which it never
// touches): a directory holding a file the list does not name is not a bundle.
const MarkerFile = ".gpucluster-bundle"

const markerHeader = "gpucluster plan bundle: every file below was written by `gpucluster plan`; it replaces this directory whole\n"

// OutputError is a refused output directory: nothing was written, removed or renamed.
type OutputError struct {
	Dir    string
	Reason string
	Fix    string
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("will not write the bundle to %s: %s; fix: %s", e.Dir, e.Reason, e.Fix)
}

// Protected are the paths an output directory may never be or contain: the stack file, the
// project directory (Pulumi.yaml), the working directory.
type Protected struct {
	StackFile  string
	ProjectDir string
	WorkDir    string
	// Stack is the stack whose bundle is written: another stack's bundle is never replaced by it.
	Stack string
}

// beforeSwap runs between writing the new bundle and swapping it in; tests use it to simulate
// a crash at the worst moment.
var beforeSwap = func(tmp string) error { return nil }

// writeBundle writes files as the bundle at dir. dir must not exist, be empty, or hold a
// previous bundle and nothing else; it must not contain a protected path. The new bundle is
// written beside dir and swapped in, so dir holds the old bundle or the new one, whole.
func writeFiles(files map[string][]byte, dir string, protect Protected) error {
	state, err := checkOutput(dir, protect)
	if err != nil {
		return err
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeStaleTemps(parent, base)
	tmp, err := os.MkdirTemp(parent, tempPrefix(base))
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after a swap it holds the old bundle; after a failure, the new one
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	// The marker first: a run killed while writing leaves a temporary directory that a later run
	// recognises as its own and removes.
	if err := os.WriteFile(filepath.Join(tmp, MarkerFile), markerContent(names), 0o644); err != nil {
		return err
	}
	for _, name := range names {
		full := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[name], 0o644); err != nil {
			return err
		}
	}
	if err := beforeSwap(tmp); err != nil {
		return err
	}
	if state == outputMissing || state == outputEmpty {
		if state == outputEmpty {
			// An empty directory is replaced; os.Remove refuses one that is not empty, so a file
			// created since the check is never lost.
			if err := os.Remove(dir); err != nil {
				return err
			}
		}
		return os.Rename(tmp, dir)
	}
	if err := swapDirs(tmp, dir); err != nil {
		return err
	}
	// tmp now holds the old bundle, which the deferred clean-up removes. A file written into it
	// since the check is not gpucluster's: swap back, and say so.
	if written, err := readMarker(filepath.Join(tmp, MarkerFile)); err != nil || len(foreignFiles(tmp, written)) > 0 {
		if err := swapDirs(tmp, dir); err != nil {
			return fmt.Errorf("a file appeared in %s while the new bundle was written, and swapping the old bundle back failed (it is at %s; nothing was deleted): %w", dir, tmp, err)
		}
		return &OutputError{Dir: dir, Reason: "a file appeared in the previous bundle while the new one was written, so gpucluster did not write all of it",
			Fix: "move that file out of the bundle directory and plan again"}
	}
	return nil
}

func markerContent(names []string) []byte {
	var b bytes.Buffer
	b.WriteString(markerHeader)
	for _, n := range names {
		b.WriteString(filepath.ToSlash(n) + "\n")
	}
	return b.Bytes()
}

type outputState int

const (
	outputMissing outputState = iota
	outputEmpty
	outputBundle
)

// checkOutput decides whether dir may receive a bundle, before anything is changed.
func checkOutput(dir string, protect Protected) (outputState, error) {
	refuse := func(reason, fix string) (outputState, error) {
		return 0, &OutputError{Dir: dir, Reason: reason, Fix: fix}
	}
	other := "choose a new directory such as review/<stack> (the default), or an empty one"
	abs, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	real, err := resolveExisting(abs)
	if err != nil {
		return 0, err
	}
	for _, p := range []struct{ path, what string }{
		{protect.StackFile, "the stack file"}, {protect.ProjectDir, "the project (Pulumi.yaml)"}, {protect.WorkDir, "the current directory"},
	} {
		if p.path == "" {
			continue
		}
		pabs, err := filepath.Abs(p.path)
		if err != nil {
			return 0, err
		}
		preal, err := resolveExisting(pabs)
		if err != nil {
			return 0, err
		}
		if within(preal, real) {
			return refuse(fmt.Sprintf("it is or contains %s (%s), and a bundle replaces its directory whole", p.what, p.path), other)
		}
	}
	if bundle, stack := enclosingBundle(filepath.Dir(real)); bundle != "" {
		return refuse(fmt.Sprintf("it lies inside %s, the bundle of stack %s, which a plan replaces whole", bundle, stack),
			fmt.Sprintf("choose a directory beside it, such as %s", filepath.Join(filepath.Dir(bundle), protect.Stack)))
	}
	info, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return outputMissing, nil
	case err != nil:
		return 0, err
	case info.Mode()&fs.ModeSymlink != 0:
		return refuse("it is a symbolic link", "give the directory's real path, or a new directory")
	case !info.IsDir():
		return refuse("it is a file, not a directory", other)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return outputEmpty, nil
	}
	written, err := readMarker(filepath.Join(abs, MarkerFile))
	if err != nil {
		return refuse(fmt.Sprintf("it is not empty and holds no %s, so gpucluster did not write it", MarkerFile), other)
	}
	if foreign := foreignFiles(abs, written); len(foreign) > 0 {
		return refuse(fmt.Sprintf("it holds a previous bundle but also files gpucluster did not write: %s", strings.Join(foreign, ", ")),
			"move those files out of the bundle directory, or choose another directory")
	}
	if stack := bundleStack(abs); protect.Stack != "" && stack != "" && stack != protect.Stack {
		return refuse(fmt.Sprintf("it holds the bundle of stack %s, not %s", stack, protect.Stack),
			fmt.Sprintf("give --out %s (beside it), or remove %s first", filepath.Join(filepath.Dir(abs), protect.Stack), dir))
	}
	return outputBundle, nil
}

// bundleStack is the stack a bundle directory's plan.json names ("" if it names none).
func bundleStack(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Stack string `json:"stack"`
	}
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	return p.Stack
}

// enclosingBundle is the nearest directory at or above dir that is a bundle (holds a marker),
// and its stack; "" if none is.
func enclosingBundle(dir string) (string, string) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := readMarker(filepath.Join(d, MarkerFile)); err == nil {
			return d, bundleStack(d)
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// readMarker returns the files a previous bundle lists, or an error when there is no marker.
func readMarker(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte(markerHeader)) {
		return nil, fmt.Errorf("%s is not a gpucluster marker", path)
	}
	files := map[string]bool{MarkerFile: true}
	sc := bufio.NewScanner(bytes.NewReader(data[len(markerHeader):]))
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			files[line] = true
		}
	}
	return files, sc.Err()
}

// foreignFiles lists what lies in dir that the marker does not name: anything but the files
// written and the directories leading to them (at most a few, for the message).
func foreignFiles(dir string, written map[string]bool) []string {
	dirs := map[string]bool{}
	for f := range written {
		for d := filepath.Dir(f); d != "." && d != "/"; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var foreign []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if path == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			foreign = append(foreign, rel)
		case d.IsDir() && dirs[rel]:
			return nil
		case d.Type().IsRegular() && written[rel]:
			return nil
		default:
			foreign = append(foreign, rel)
		}
		if d != nil && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if len(foreign) > 5 {
		foreign = append(foreign[:5], fmt.Sprintf("and %d more", len(foreign)-5))
	}
	return foreign
}

// resolveExisting resolves symbolic links in the longest existing prefix of an absolute path,
// so that a link cannot hide that an output directory contains a protected one.
func resolveExisting(abs string) (string, error) {
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest), nil
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func tempPrefix(base string) string { return "." + base + ".gpucluster-tmp-" }

// removeStaleTemps removes temporary bundles a killed run left beside dir: only directories of
// this bundle's temp name that hold a gpucluster marker and nothing else.
func removeStaleTemps(parent, base string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix(base)) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if written, err := readMarker(filepath.Join(path, MarkerFile)); err == nil && len(foreignFiles(path, written)) == 0 {
			_ = os.RemoveAll(path)
		}
	}
}
