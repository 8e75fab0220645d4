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
	"github.com/gpucluster/gpucluster/internal/plan"
)

// DefaultStack is what `gpucluster plan` plans without flags.
const DefaultStack = "dev"

func cmdPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plan", stderr)
	stack := fs.String("stack", "", "stack to plan (default "+DefaultStack+"): stacks/Pulumi.<stack>.yaml")
	config := fs.String("config", "", "plan this stack file instead (any path)")
	out := fs.String("out", "", "bundle directory (default review/<stack>; with --all, the parent of one directory per stack)")
	all := fs.Bool("all", false, "plan every stack in stacks/")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) > 0 || (*stack != "" && *config != "") || (*all && (*stack != "" || *config != "")) {
		fmt.Fprintln(stderr, "usage: gpucluster plan [--stack NAME | --config FILE | --all] [--out DIR]")
		return 2
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return 1
	}
	var files []string
	switch {
	case *config != "":
		files = []string{*config}
	case *all:
		dir, err := stacksDir(cwd)
		if err != nil {
			fmt.Fprintf(stderr, "gpucluster: %v\n", err)
			return 1
		}
		files, _ = filepath.Glob(filepath.Join(dir, "Pulumi.*.yaml"))
		if len(files) == 0 {
			fmt.Fprintf(stderr, "gpucluster: no stack files in %s\n", dir)
			return 1
		}
	default:
		name := *stack
		if name == "" {
			name = DefaultStack
		}
		f, err := program.StackFile(cwd, name)
		if err != nil {
			fmt.Fprintf(stderr, "gpucluster: %v\n", err)
			return 1
		}
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintf(stderr, "gpucluster: stack %q has no file %s; stacks: %s\n", name, f, strings.Join(stackNames(filepath.Dir(f)), ", "))
			return 1
		}
		files = []string{f}
	}
	code := 0
	for _, f := range files {
		dir := filepath.Join("review", topology.StackName(f))
		switch {
		case *all && *out != "":
			dir = filepath.Join(*out, topology.StackName(f))
		case *out != "":
			dir = *out
		}
		code = max(code, planOne(f, dir, stdout, stderr))
	}
	return code
}

func planOne(file, dir string, stdout, stderr io.Writer) int {
	r, err := plan.Write(relative(file), dir)
	if err != nil {
		var ces topology.ConfigErrors
		if errors.As(err, &ces) {
			fmt.Fprintf(stderr, "gpucluster: %s is invalid: %d error(s); nothing written\n", relative(file), len(ces))
			for _, e := range ces {
				fmt.Fprintf(stderr, "  %s\n", e.Error())
			}
			return 1
		}
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return 1
	}
	errs, warns := r.Errors(), 0
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityWarning {
			warns++
		}
	}
	fmt.Fprintf(stdout, "%s: %d resources, %d pool(s), %d error(s), %d warning(s) → %s\n",
		r.Spec.Stack, len(r.Resources), len(r.Spec.Pools), errs, warns, filepath.Join(dir, "REVIEW.md"))
	if note := topology.EnvironmentNote(r.Spec); note != "" {
		fmt.Fprintf(stderr, "  note: %s\n", note)
	}
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError {
			fmt.Fprintf(stderr, "  error: %s %s: %s\n", f.Pool, f.Code, f.Message)
		}
	}
	if errs > 0 {
		return 1
	}
	return 0
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
func relative(path string) string {
	cwd, err := os.Getwd()
	if err != nil {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(cwd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
