// pulumi-resource-aws is the aws provider test double of the real-engine tests
// (test/realengine/awsdouble), built under the name the Pulumi engine looks for on PATH.
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
)

func main() {
	err := provider.Main("aws", func(*provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return awsdouble.New()
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
