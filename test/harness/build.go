package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// BuildCommand is what builds the harness; every "not built" error names it.
const BuildCommand = "make harness"

// Binary is the path of a built harness binary ("kube", "etcd", "mpi-operator", "pulumi", …). It
// never builds: a test that needs a program which `make harness` has not built for the current
// sources fails at once with an error that names the command, instead of spending minutes of
// its own timeout on a compile.
func Binary(name string) (string, error) {
	for _, p := range Programs {
		for _, b := range p.Binaries() {
			if b == name {
				dir, err := p.Built()
				if err != nil {
					return "", err
				}
				return filepath.Join(dir, name), nil
			}
		}
	}
	return "", fmt.Errorf("harness: no program builds a binary %q", name)
}

// Built is the program's directory if `make harness` built it for the current sources.
func (p Program) Built() (string, error) {
	dir, err := p.Dir()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("the test harness is not built: %s (%s, from %s) is missing for the current sources; "+
			"run `%s` first (it builds every harness program once, outside go test's timeout; `make test` does both)",
			p.Name, p.About, p.Module, BuildCommand)
	}
	return dir, nil
}

// Result is how one program's build went.
type Result struct {
	Program Program
	Dir     string
	Built   bool // false: it was already built
	Wall    time.Duration
	CPU     time.Duration // user and system time of the build and every process it waited for
	Err     error
}

// Build builds every program that is not built yet, `parallel` at a time in the order of
// Programs, and writes a line per program as it finishes. It returns every program's result;
// the error is the first failure.
func Build(w io.Writer, programs []Program, parallel int) ([]Result, error) {
	results := make([]Result, len(programs))
	var mu sync.Mutex
	slots := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, p := range programs {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			r := build(p)
			mu.Lock()
			defer mu.Unlock()
			results[i] = r
			switch {
			case r.Err != nil:
				fmt.Fprintf(w, "harness: %-11s FAILED after %s: %v\n", p.Name, r.Wall.Round(time.Second), r.Err)
			case r.Built:
				fmt.Fprintf(w, "harness: %-11s built in %s wall, %s CPU (%s)\n", p.Name, r.Wall.Round(time.Second), r.CPU.Round(time.Second), p.About)
			default:
				fmt.Fprintf(w, "harness: %-11s up to date (%s)\n", p.Name, p.About)
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.Err != nil {
			return results, fmt.Errorf("building %s: %w", r.Program.Name, r.Err)
		}
	}
	return results, nil
}

func build(p Program) Result {
	r := Result{Program: p}
	start := time.Now()
	defer func() { r.Wall = time.Since(start) }()
	dir, err := p.Dir()
	if err != nil {
		r.Err = err
		return r
	}
	r.Dir = dir
	r.Built, r.Err = once(dir, func(tmp string) error {
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return err
		}
		overlay, err := p.overlay(tmp + ".gen")
		defer os.RemoveAll(tmp + ".gen")
		if err != nil {
			return fmt.Errorf("generating the files %s embeds: %w", p.Name, err)
		}
		cmd := p.command(tmp, overlay)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState != nil {
			r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err != nil {
			return fmt.Errorf("%v in %s: %v\n%s", cmd.Args, cmd.Dir, err, out)
		}
		for _, b := range p.Binaries() {
			if _, err := os.Stat(filepath.Join(tmp, b)); err != nil {
				return fmt.Errorf("%v wrote no %s", cmd.Args, b)
			}
		}
		return nil
	})
	r.Wall = time.Since(start)
	return r
}

// overlay writes the program's generated files under dir and returns the go build -overlay
// file that puts them in place ("" if it has none).
func (p Program) overlay(dir string) (string, error) {
	if p.Generated == nil {
		return "", nil
	}
	files, err := p.Generated(p.moduleDir)
	if err != nil {
		return "", err
	}
	replace := map[string]string{}
	for rel, data := range files {
		target := filepath.Join(RepoRoot(), p.Module, rel)
		file := filepath.Join(dir, fmt.Sprintf("%d-%s", len(replace), filepath.Base(target)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return "", err
		}
		replace[target] = file
	}
	data, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "overlay.json")
	return file, os.WriteFile(file, data, 0o644)
}

// moduleDir is the directory of a module the program's build module requires, downloaded at
// the version its go.mod pins.
func (p Program) moduleDir(module string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = filepath.Join(RepoRoot(), p.Module)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s in %s: %v %s", module, cmd.Dir, err, info.Error)
	}
	return info.Dir, nil
}

// command is the program's build, writing into tmp; overlay is a go build -overlay file or "".
func (p Program) command(tmp, overlay string) *exec.Cmd {
	src := filepath.Join(RepoRoot(), p.Module)
	if p.NPM {
		// npm ci into a copy of the lock: no install scripts (@pulumi/kubernetes' would download a
		// provider plugin, which the registries reached here do not serve).
		script := `cp "$2/package.json" "$2/package-lock.json" "$1/" && cd "$1" && exec npm ci --ignore-scripts --no-audit --no-fund`
		cmd := exec.Command("sh", "-c", script, "npm-ci", tmp, src)
		return cmd
	}
	args := []string{"build", "-trimpath", "-o", tmp + string(filepath.Separator)}
	if p.LDFlags != "" {
		args = append(args, "-ldflags", p.LDFlags)
	}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, p.Packages...)...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	return cmd
}
