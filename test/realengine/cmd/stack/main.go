// Command stack runs the real-engine tier for one stack of stacks/ (`make stack STACK=<name>`):
// go test on the group package(s) that hold it (test/realengine/stacks/<group>,
// stackgroups.Groups), only that stack's tests, with -count=1 -v. Flags after the stack's name
// go to go test (-timeout, -run is set here). It needs the harness (`make harness`; make stack
// runs it first).
//
//	go run ./test/realengine/cmd/stack <stack> [go test flags]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/gpucluster/gpucluster/test/realengine/stackgroups"
)

func main() {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") {
		fmt.Fprintf(os.Stderr, "usage: go run ./test/realengine/cmd/stack <stack> [go test flags]\n(make stack STACK=<stack>; the stacks: %s)\n", strings.Join(stackgroups.Stacks(), ", "))
		os.Exit(2)
	}
	stack := os.Args[1]
	groups := stackgroups.Of(stack)
	if len(groups) == 0 {
		fmt.Fprintf(os.Stderr, "stack: no group of stackgroups.Groups runs stack %q (test/realengine/stackgroups/stackgroups.go); the stacks: %s\n", stack, strings.Join(stackgroups.Stacks(), ", "))
		os.Exit(2)
	}
	args := []string{"test", "-count=1", "-v", "-run", "^TestRealEngineStacks$/^" + regexp.QuoteMeta(stack) + "$"}
	args = append(args, os.Args[2:]...)
	for _, g := range groups {
		args = append(args, "./test/realengine/stacks/"+g)
	}
	fmt.Fprintf(os.Stderr, "stack %s: go %s\n", stack, strings.Join(args, " "))
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "stack:", err)
		os.Exit(1)
	}
}
