// The Kubernetes control plane for the tests, v1.36.2 from the module proxy, as one binary that
// runs the component named by its first argument (as hyperkube did): kube-apiserver,
// kube-scheduler, kube-job-controller, kube-app-controllers or kube-garbage-collector. One build
// shares the compile and the link that separate binaries of the same module would each repeat.
//
// This module is every Kubernetes program the tests run, built by one `go build`
// (test/harness): this control plane, the Kubeflow MPI operator (./mpi-operator, the release's
// own entry point), and Kubeflow Trainer's controller manager, JobSet and Kueue (by import path,
// listed as tools in go.mod). One module, so that the libraries they share (k8s.io/api, client-go,
// apiserver, controller-runtime, and the kube-scheduler framework Kueue links) compile once, at one
// version: Kubernetes v1.36.2, the newest minor EKS runs that gpucluster accepts, and the one the
// operators' releases build with (Kueue v0.19.2 links kube-scheduler's v1.36 internals; Kubeflow
// Trainer v2.3.0's generated OpenAPI names a type v1.37 removed).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	commands := map[string]func() *cobra.Command{
		"kube-apiserver":         apiserver.NewAPIServerCommand,
		"kube-scheduler":         func() *cobra.Command { return scheduler.NewSchedulerCommand() },
		"kube-job-controller":    newJobControllerCommand,
		"kube-app-controllers":   newAppControllersCommand,
		"kube-garbage-collector": newGarbageCollectorCommand,
		// What the real-engine tests run besides: the DaemonSet and Endpoints controllers, and
		// the kubelet stand-in that starts every bound pod.
		"kube-daemonset-endpoints-controllers": newDaemonSetEndpointsControllersCommand,
		"kubelet-stand-in":                     newKubeletStandInCommand,
		"pod-sandbox":                          newPodSandboxCommand,
	}
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: kube kube-apiserver|kube-scheduler|kube-job-controller|kube-app-controllers|kube-garbage-collector|kube-daemonset-endpoints-controllers|kubelet-stand-in|pod-sandbox [flags]")
		os.Exit(2)
	}
	cmd := commands[os.Args[1]]()
	os.Args = append(os.Args[:1], os.Args[2:]...)
	os.Exit(cli.Run(cmd))
}
