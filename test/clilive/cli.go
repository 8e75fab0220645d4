// Package clilive runs the built gpucluster CLI against live clusters of the harness: the real
// kube-apiserver, scheduler and controllers, the real Kueue, MPI operator, Trainer and JobSet,
// kwok playing the nodes. These tests ran inside cmd/gpucluster's test binary, calling the
// command in-process, until that binary neared its 10-minute alarm; here they have their own,
// and they run the program a user runs: its flags, its exit codes, a real Ctrl-C (SIGINT).
// They skip under -short, as every control-plane test does. This package is what they share;
// each group is a package of its own, so a test binary of its own with its own alarm:
// benchrunlive (bench run) and healthlive (health, verify).
package clilive

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/internal/charts"
	"github.com/gpucluster/gpucluster/test/harness"
)

// TestDay is the instant the CLI's clock starts at (GPUCLUSTER_AT), so that no test depends on
// the day it runs; cmd/gpucluster's tests use the same.
var TestDay = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// FastPoll is --poll for bench run and health: kwok finishes a job in seconds.
const FastPoll = "500ms"

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// Repo is a path in this checkout.
func Repo(parts ...string) string {
	return filepath.Join(append([]string{harness.RepoRoot()}, parts...)...)
}

// cli is the gpucluster binary built from this checkout (harness.BuildOwn: `make harness` built
// it, and go build finds it up to date).
func cli(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the built CLI against a live control plane: skipped under -short")
	}
	cliOnce.Do(func() {
		var dir string
		if dir, cliErr = harness.BuildOwn(); cliErr == nil {
			cliPath = filepath.Join(dir, "gpucluster")
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// command is the CLI with args, its clock at TestDay and no chart renderer (these commands
// render none), in the test process's environment, which wins (exec keeps a variable's last
// value): a test that runs the CLI twice in one second of its clock sets GPUCLUSTER_AT later
// with t.Setenv, as each process starts its clock there.
func command(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(cli(t), args...)
	cmd.Env = append([]string{"GPUCLUSTER_AT=" + TestDay.Format(time.RFC3339), charts.RendererEnv + "=" + charts.RendererOff}, os.Environ()...)
	return cmd
}

// Run runs the CLI to its end: exit code, stdout, stderr.
func Run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := command(t, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	return exitCode(t, cmd.Run()), out.String(), errOut.String()
}

// RunInterruptedOn runs the CLI and sends it SIGINT, as Ctrl-C does, once its stdout holds word.
func RunInterruptedOn(t *testing.T, word string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := command(t, args...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	buf := make([]byte, 4096)
	sent := false
	for {
		n, err := pipe.Read(buf)
		out.Write(buf[:n])
		if !sent && strings.Contains(out.String(), word) {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	code = exitCode(t, cmd.Wait())
	if !sent {
		t.Errorf("the command ended before its output held %q", word)
	}
	return code, out.String(), errOut.String()
}

// exitCode is the process's exit code; a failure to run it at all ends the test.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	if exit, ok := err.(*exec.ExitError); ok && exit.Exited() {
		return exit.ExitCode()
	}
	t.Fatalf("running the CLI: %v", err)
	return -1
}
