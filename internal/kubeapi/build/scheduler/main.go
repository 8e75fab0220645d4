// kube-scheduler for the tests' API server: the same Kubernetes module as the apiserver, so the
// pods gpucluster emits are placed by the scheduler a v1.34 cluster runs.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() { os.Exit(cli.Run(app.NewSchedulerCommand())) }
