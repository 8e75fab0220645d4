package main

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/job"
)

// newJobControllerCommand runs Kubernetes' Job controller (pkg/controller/job) the way
// kube-controller-manager starts it (cmd/kube-controller-manager/app/batch.go: the shared pod
// and job informers, the controller's Run), without the rest of the controller manager, whose
// hundred other controllers, volume plugins and cloud providers the tests do not need and
// would only make the build slower.
func newJobControllerCommand() *cobra.Command {
	workers := 5 // kube-controller-manager's --concurrent-job-syncs default
	return controllerCommand("kube-job-controller", func(ctx context.Context, _ *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error {
		// No Workload or PodGroup informer: kube-controller-manager passes none unless the alpha
		// WorkloadWithJob gate is on, and the tests run with the release's default gates.
		jc, err := job.NewController(ctx, client, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), nil, nil)
		if err != nil {
			return err
		}
		factory.Start(ctx.Done())
		jc.Run(ctx, workers)
		return nil
	})
}
