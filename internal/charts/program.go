package charts

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ProgramName is the chart renderer's executable.
const ProgramName = "gpucluster-charts"

// Protocol is the version of what gpucluster writes to gpucluster-charts and reads back; both
// refuse any other, so an installed renderer of another release is named, never half-understood.
const Protocol = 1

// Input is what gpucluster-charts reads on its standard input.
type Input struct {
	Protocol int       `json:"protocol"`
	Charts   []Request `json:"charts"`
}

// Output is what it writes on its standard output.
type Output struct {
	Protocol int        `json:"protocol"`
	Charts   []Rendered `json:"charts"`
}

// Program is gpucluster-charts at Path: a Renderer.
type Program struct{ Path string }

// programTimeout bounds one run over every chart (each chart's fetch has its own, shorter bound).
const programTimeout = 10 * time.Minute

// Render runs the program over every request. When it cannot run or answers with anything but
// one result per request, every chart gets that as its reason: nothing half-read.
func (p Program) Render(reqs []Request) []Rendered {
	if len(reqs) == 0 {
		return nil
	}
	in, err := json.Marshal(Input{Protocol: Protocol, Charts: reqs})
	if err != nil {
		return NotRendered(reqs, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), programTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return NotRendered(reqs, fmt.Sprintf("%s failed (%v): %s", p.Path, err, lastLine(stderr.String())))
	}
	var out Output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return NotRendered(reqs, fmt.Sprintf("%s answered something other than its output: %v", p.Path, err))
	}
	if out.Protocol != Protocol {
		return NotRendered(reqs, fmt.Sprintf("%s speaks protocol %d, this gpucluster %d: install both from the same release", p.Path, out.Protocol, Protocol))
	}
	if len(out.Charts) != len(reqs) {
		return NotRendered(reqs, fmt.Sprintf("%s answered for %d of %d charts", p.Path, len(out.Charts), len(reqs)))
	}
	return out.Charts
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no message"
	}
	return s
}

// RendererEnv names the renderer to run; RendererOff there renders no chart (an offline review
// that needs no registry: each chart stays its reference, version and values).
const (
	RendererEnv = "GPUCLUSTER_CHART_RENDERER"
	RendererOff = "off"
)

// Locate finds gpucluster-charts, in this order: GPUCLUSTER_CHART_RENDERER; beside the running
// executable (where `go install ./cmd/...` puts both); built from projectDir when it is this
// module's source (a checkout running `go run ./cmd/gpucluster`: go build finds it up to date
// after the first time, and says what it builds on progress); on PATH.
func Locate(projectDir string, progress io.Writer) (string, error) {
	switch p := os.Getenv(RendererEnv); p {
	case RendererOff:
		return "", errors.New(RendererEnv + "=" + RendererOff + ": charts are not rendered")
	case "":
	default:
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), ProgramName)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
			return beside, nil
		}
	}
	if isThisModule(projectDir) {
		return buildFromSource(projectDir, progress)
	}
	if p, err := exec.LookPath(ProgramName); err == nil {
		return p, nil
	}
	return "", errors.New(ProgramName + " is not installed: install it with gpucluster (go install github.com/gpucluster/gpucluster/cmd/" + ProgramName + "@<the same version>), or name it in " + RendererEnv)
}

// modulePath is this module's, as go.mod declares it.
const modulePath = "github.com/gpucluster/gpucluster"

func isThisModule(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if mod, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			_, err := os.Stat(filepath.Join(dir, "cmd", ProgramName, "main.go"))
			return strings.TrimSpace(mod) == modulePath && err == nil
		}
	}
	return false
}

// buildFromSource builds the renderer of the checkout at dir into the user's cache, one
// directory per checkout (named by a hash of its path), and returns its path.
func buildFromSource(dir string, progress io.Writer) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("building %s: no cache directory: %w", ProgramName, err)
	}
	sum := sha256.Sum256([]byte(dir))
	out := filepath.Join(cache, "gpucluster", "bin-"+hex.EncodeToString(sum[:])[:16], ProgramName)
	if _, err := os.Stat(out); err != nil && progress != nil {
		fmt.Fprintf(progress, "building the chart renderer once (go build ./cmd/%s; a few minutes on a fresh machine)\n", ProgramName)
	}
	build := exec.Command("go", "build", "-o", out, "./cmd/"+ProgramName)
	build.Dir = dir
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s in %s: %v: %s", ProgramName, dir, err, lastLine(string(b)))
	}
	return out, nil
}

// OnDemand is the Renderer the CLI uses: it looks for gpucluster-charts (Locate) only when a
// stack has charts, so a stack without any never builds or runs it.
type OnDemand struct {
	ProjectDir string
	Progress   io.Writer // where a build from source says so; nil says nothing
}

func (o OnDemand) Render(reqs []Request) []Rendered {
	if len(reqs) == 0 {
		return nil
	}
	path, err := Locate(o.ProjectDir, o.Progress)
	if err != nil {
		return NotRendered(reqs, err.Error())
	}
	return Program{Path: path}.Render(reqs)
}
