package main

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/pkg/controller/job"
)

// newJobControllerCommand runs Kubernetes' Job controller (pkg/controller/job) the way
// kube-controller-manager starts it (cmd/kube-controller-manager/app/batch.go: the shared pod
// and job informers, the controller's Run), without the rest of the controller manager, whose
// hundred other controllers, volume plugins and cloud providers the tests do not need and
// would only make the build slower.
func newJobControllerCommand() *cobra.Command {
	var kubeconfig string
	workers := 5 // kube-controller-manager's --concurrent-job-syncs default
	cmd := &cobra.Command{
		Use: "kube-job-controller",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			factory := informers.NewSharedInformerFactory(client, 0)
			jc, err := job.NewController(ctx, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), client)
			if err != nil {
				return err
			}
			factory.Start(ctx.Done())
			jc.Run(ctx, workers)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	return cmd
}
