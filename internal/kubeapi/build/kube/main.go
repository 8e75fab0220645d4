// The Kubernetes control plane for the tests, v1.34.1 from the module proxy, as one binary that
// runs the component named by its first argument (as hyperkube did): kube-apiserver,
// kube-scheduler, kube-job-controller, kube-app-controllers or kube-garbage-collector. One build
// shares the compile and the link that separate binaries of the same module would each repeat.
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
	}
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: kube kube-apiserver|kube-scheduler|kube-job-controller|kube-app-controllers|kube-garbage-collector [flags]")
		os.Exit(2)
	}
	cmd := commands[os.Args[1]]()
	os.Args = append(os.Args[:1], os.Args[2:]...)
	os.Exit(cli.Run(cmd))
}
