// kube-controller-manager for the tests' API server, of the same Kubernetes module: the harness
// runs only its Job controller.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() { os.Exit(cli.Run(app.NewControllerManagerCommand())) }
