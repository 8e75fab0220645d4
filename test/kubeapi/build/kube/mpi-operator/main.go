// The Kubeflow MPI operator for the tests' API server, built from the release the project
// installs (go.mod pins it), started with the release's own options and entry point.
package main

import (
	"flag"

	"k8s.io/klog/v2"

	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app"
	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app/options"
)

func main() {
	// The options package registers klog's flags itself (its init, since v0.8).
	opts := options.NewServerOption()
	opts.AddFlags(flag.CommandLine)
	flag.Parse()
	if err := app.Run(opts); err != nil {
		klog.Fatal(err)
	}
}
