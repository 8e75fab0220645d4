package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/charts"
	"github.com/gpucluster/gpucluster/internal/plan"
)

// DefaultStack is what `gpucluster plan` plans without flags.
const DefaultStack = "dev"

func cmdPlan(args []string, stdout, stderr io.Writer) int {
	c := newCLI("plan", "plan [--stack NAME | --config FILE | --all] [--out DIR] [--require-charts]", stdout, stderr)
	stack := c.fs.String("stack", "", "stack to plan (default "+DefaultStack+"): stacks/Pulumi.<stack>.yaml")
	config := c.fs.String("config", "", "plan this stack file instead (any path)")
	out := c.fs.String("out", "", "bundle directory (default the project's review/<stack>; with --all, the parent of one directory per stack)")
	all := c.fs.Bool("all", false, "plan every stack in stacks/")
	requireCharts := c.fs.Bool("require-charts", false, "fail (exit 1) when a Helm chart of the stack could not be fetched or rendered; the bundle is written either way")
	if code, ok := c.parseFlagsOnly(args, planArgument); !ok {
		return code
	}
	switch {
	case *stack != "" && *config != "":
		return c.fail("--stack and --config both name the stack file: give one")
	case *all && (*stack != "" || *config != ""):
		return c.fail("--all plans every stack: give it without --stack or --config")
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return exitFail
	}
	var files []string
	switch {
	case *config != "":
		files = []string{*config}
	case *all:
		dir, err := stacksDir(cwd)
		if err != nil {
			fmt.Fprintf(stderr, "gpucluster plan: %v\n", err)
			return exitUnreadable
		}
		files, _ = filepath.Glob(filepath.Join(dir, "Pulumi.*.yaml"))
		if len(files) == 0 {
			fmt.Fprintf(stderr, "gpucluster plan: no stack files in %s\n", dir)
			return exitUnreadable
		}
	default:
		name := *stack
		if name == "" {
			name = DefaultStack
		}
		f, code, ok := c.stackFile(name, true)
		if !ok {
			return code
		}
		files = []string{f}
	}
	project := projectOr(cwd, files[0])
	reviewDir := filepath.Join(project, "review")
	renderer := charts.OnDemand{ProjectDir: project, Progress: stderr}
	code := exitOK
	for i, f := range files {
		dir := filepath.Join(reviewDir, topology.StackName(f))
		switch {
		case *all && *out != "":
			dir = filepath.Join(*out, topology.StackName(f))
		case *out != "":
			dir = *out
		}
		if *all {
			fmt.Fprintf(stderr, "[%d/%d] %s\n", i+1, len(files), relative(f))
		}
		_, c := planOne(f, dir, renderer, *requireCharts, stdout, stderr)
		code = max(code, c)
	}
	return code
}

// planArgument is the flag an argument given to plan without one was likely meant for.
func planArgument(arg string) string {
	if strings.HasSuffix(arg, ".yaml") || strings.ContainsRune(arg, filepath.Separator) {
		return "--config " + arg
	}
	return "--stack " + arg
}

// projectOr is the project directory (Pulumi.yaml) above the working directory, else above the
// stack file, else the working directory: bundles go to the project's review/ wherever it is run.
func projectOr(cwd, stackFile string) string {
	for _, from := range []string{cwd, filepath.Dir(stackFile)} {
		if p, err := program.ProjectDir(from); err == nil {
			return p
		}
	}
	return cwd
}

// planOne plans one stack file into dir, saying on stdout what the bundle holds and on stderr
// what is wrong with it. The result is nil where the file could not be planned.
func planOne(file, dir string, renderer charts.Renderer, requireCharts bool, stdout, stderr io.Writer) (*plan.Result, int) {
	r, err := plan.Write(relative(file), dir, now(), renderer)
	if err != nil {
		var ces topology.ConfigErrors
		if errors.As(err, &ces) {
			fmt.Fprintf(stderr, "gpucluster: %s is invalid: %d error(s); nothing written\n", relative(file), len(ces))
			for _, e := range ces {
				fmt.Fprintf(stderr, "  %s\n", e.Error())
			}
			return nil, 1
		}
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return nil, 1
	}
	errs, warns := r.Errors(), 0
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityWarning {
			warns++
		}
	}
	fmt.Fprintf(stdout, "%s: %d resources, %d pool(s), %d error(s), %d warning(s) → %s\n",
		r.Spec.Stack, len(r.Resources), len(r.Spec.Pools), errs, warns, shown(filepath.Join(dir, "REVIEW.md")))
	if note := topology.EnvironmentNote(r.Spec); note != "" {
		fmt.Fprintf(stderr, "  note: %s\n", note)
	}
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError {
			fmt.Fprintf(stderr, "  error: %s %s: %s\n", f.Pool, f.Code, f.Message)
		}
	}
	for _, c := range r.Charts {
		if c.Reason != "" {
			fmt.Fprintf(stderr, "  chart %s (%s %s) not rendered: its objects are not in the review: %s\n", c.Request.Resource, c.Request.Chart, c.Request.Version, c.Reason)
		}
	}
	if errs > 0 || (requireCharts && r.ChartsNotRendered() > 0) {
		return r, 1
	}
	return r, 0
}

// stacksDir is the project's stack directory (Pulumi.yaml's stackConfigDir).
func stacksDir(cwd string) (string, error) {
	f, err := program.StackFile(cwd, "x")
	if err != nil {
		return "", err
	}
	return filepath.Dir(f), nil
}

func stackNames(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "Pulumi.*.yaml"))
	var names []string
	for _, f := range files {
		names = append(names, topology.StackName(f))
	}
	return names
}

// relative shortens a path under the working directory, so bundles name the file as the user does
// and stay byte-identical wherever the checkout lives.
func relative(path string) string { return fromWorkDir(path, false) }

// shown is a path as the user reaches it from the working directory ("../review/dev/REVIEW.md"
// from stacks/).
func shown(path string) string { return fromWorkDir(path, true) }

// fromWorkDir is path relative to the working directory: only below it unless up, else the path.
func fromWorkDir(path string, up bool) string {
	cwd, err := os.Getwd()
	if err != nil {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(cwd, abs); err == nil && (up || !strings.HasPrefix(rel, "..")) {
		return rel
	}
	return path
}
