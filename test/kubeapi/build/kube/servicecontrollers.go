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
	"k8s.io/kubernetes/pkg/controller/endpointslice"
)

// newDaemonSetEndpointsControllersCommand runs the DaemonSet controller (a pod per matching node,
// and the status the kubernetes provider's DaemonSet await reads), the Endpoints controller (a
// Service's ready pod addresses, which the provider's Service await waits for) and the
// EndpointSlice controller (the same addresses as EndpointSlices, which the API server dials a
// webhook, conversion or aggregated API Service by with --enable-aggregator-routing), each
// started as kube-controller-manager starts it (cmd/kube-controller-manager/app/apps.go, core.go
// and discovery.go: the failed-pods backoff, the default concurrency, batch period and 100
// endpoints per slice).
func newDaemonSetEndpointsControllersCommand() *cobra.Command {
	return controllerCommand("kube-daemonset-endpoints-controllers", func(ctx context.Context, _ *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error {
		dsc, err := daemon.NewDaemonSetsController(ctx, factory.Apps().V1().DaemonSets(), factory.Apps().V1().ControllerRevisions(),
			factory.Core().V1().Pods(), factory.Core().V1().Nodes(), client, flowcontrol.NewBackOff(1*time.Second, 15*time.Minute))
		if err != nil {
			return err
		}
		ec := endpoint.NewEndpointController(ctx, factory.Core().V1().Pods(), factory.Core().V1().Services(),
			factory.Core().V1().Endpoints(), client, 0)
		esc := endpointslice.NewController(ctx, factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes(),
			factory.Discovery().V1().EndpointSlices(), 100, client, 0)
		factory.Start(ctx.Done())
		go ec.Run(ctx, 5)
		go esc.Run(ctx, 5)
		dsc.Run(ctx, 2)
		return nil
	})
}
