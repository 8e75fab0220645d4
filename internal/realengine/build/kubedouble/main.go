// pulumi-resource-kubernetes is the kubernetes provider test double of gpucluster's real-engine
// tests (the real provider binary is not served here). It speaks the provider gRPC protocol to
// the real Pulumi engine and does what the real provider v4.23.0 does, against the harness's
// real kube-apiserver: it server-side applies every object (with strict field validation, so an
// object the API would refuse fails the test), awaits Deployments and CRDs, deletes on destroy,
// and constructs the Helm v4 Chart and yaml/v2 ConfigFile components by rendering them with
// Helm's Go SDK at the version pulumi-kubernetes v4.23.0 pins (v3.17.3; built against the
// Kubernetes libraries of the test cluster's release, v0.34.1, which the control-plane build
// compiles too, instead of Helm's v0.32: the two builds share their compile). Where it must differ
// from the real provider (it authenticates with the harness's token, not the kubeconfig's
// `aws eks get-token`; it reads charts and files from local copies at the pinned versions instead
// of the network; it awaits scheduling, not readiness, since no kubelet runs containers), the code
// says so.
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func main() {
	err := provider.Main("kubernetes", func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return newProvider(host)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
