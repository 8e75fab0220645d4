// The gpucluster Pulumi program: `pulumi up -s <stack>` from the repository root.
package main

import (
	"os"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/infra/program"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		file, err := program.StackFile(dir, ctx.Stack())
		if err != nil {
			return err
		}
		// The one place the program reads the wall clock: the instant this up judges the stack on.
		return program.RunEngine(file, time.Now)(ctx)
	})
}
