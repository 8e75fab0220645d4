package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/controller/endpoint"
)

// newDaemonSetEndpointsControllersCommand runs the DaemonSet controller (a pod per matching node,
// and the status the kubernetes provider's DaemonSet await reads) and the Endpoints controller
// (a Service's ready pod addresses, which the provider's Service await waits for), each started
// as kube-controller-manager starts it (cmd/kube-controller-manager/app/apps.go and core.go: the
// failed-pods backoff, the default concurrency and batch period).
func newDaemonSetEndpointsControllersCommand() *cobra.Command {
	return controllerCommand("kube-daemonset-endpoints-controllers", func(ctx context.Context, _ *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error {
		dsc, err := daemon.NewDaemonSetsController(ctx, factory.Apps().V1().DaemonSets(), factory.Apps().V1().ControllerRevisions(),
			factory.Core().V1().Pods(), factory.Core().V1().Nodes(), client, flowcontrol.NewBackOff(1*time.Second, 15*time.Minute))
		if err != nil {
			return err
		}
		ec := endpoint.NewEndpointController(ctx, factory.Core().V1().Pods(), factory.Core().V1().Services(),
			factory.Core().V1().Endpoints(), client, 0)
		factory.Start(ctx.Done())
		go ec.Run(ctx, 5)
		dsc.Run(ctx, 2)
		return nil
	})
}
