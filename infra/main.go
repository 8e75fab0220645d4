// The gpucluster Pulumi program: `pulumi up -s <stack>` from the repository root.
package main

import (
	"os"

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
		return program.RunEngine(file)(ctx)
	})
}
