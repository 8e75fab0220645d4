package main

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// controllerCommand is a command that runs controllers against the API server of --kubeconfig
// until it is signalled: run gets the client configuration, a client and a shared informer
// factory, which it starts once its controllers have registered their informers.
func controllerCommand(use string, run func(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use: use,
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
			return run(ctx, cfg, client, informers.NewSharedInformerFactory(client, 0))
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	return cmd
}
