package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"
	"k8s.io/kubernetes/pkg/controller/deployment"
	namespacecontroller "k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	serviceaccountcontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
)

// newAppControllersCommand runs the controllers that turn what `pulumi up` applies into pods and
// take it away again on destroy: Deployment and ReplicaSet (a Deployment's pods, for the real
// scheduler to place), Namespace (a deleted namespace's content and finalizer) and ServiceAccount
// (each namespace's default account, which pods need), each started as kube-controller-manager
// starts it (cmd/kube-controller-manager/app/apps.go and core.go) with its default concurrency,
// without the rest of the controller manager; and the kubelet's last step of a pod deletion, where
// no kubelet stand-in runs (--finish-pod-deletions). With --root-ca-file, the root CA certificate
// publisher too (certificates.go): every namespace's kube-root-ca.crt ConfigMap, which the
// service account volume of every pod projects as ca.crt.
func newAppControllersCommand() *cobra.Command {
	finishDeletions, rootCAFile := true, ""
	cmd := controllerCommand("kube-app-controllers", func(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error {
		// The namespace controller makes many discovery and delete calls; the controller
		// manager raises its rate limits as here (startNamespaceController).
		nsCfg := *cfg
		nsCfg.QPS, nsCfg.Burst = 20*5, 100*10
		nsClient, err := kubernetes.NewForConfig(&nsCfg)
		if err != nil {
			return err
		}
		meta, err := metadata.NewForConfig(&nsCfg)
		if err != nil {
			return err
		}
		dc, err := deployment.NewDeploymentController(ctx, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(),
			factory.Core().V1().Pods(), client)
		if err != nil {
			return err
		}
		rc := replicaset.NewReplicaSetController(ctx, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client, replicaset.BurstReplicas)
		nc := namespacecontroller.NewNamespaceController(ctx, nsClient, meta, nsClient.Discovery().ServerPreferredNamespacedResources,
			factory.Core().V1().Namespaces(), 5*time.Minute, v1.FinalizerKubernetes)
		sc, err := serviceaccountcontroller.NewServiceAccountsController(klog.FromContext(ctx), factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces(),
			client, serviceaccountcontroller.DefaultServiceAccountsControllerOptions())
		if err != nil {
			return err
		}
		if finishDeletions {
			finishPodDeletions(ctx, client, factory)
		}
		if rootCAFile != "" {
			rootCA, err := os.ReadFile(rootCAFile)
			if err != nil {
				return err
			}
			publisher, err := rootcacertpublisher.NewPublisher(factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), client, rootCA)
			if err != nil {
				return err
			}
			go publisher.Run(ctx, 1)
		}
		factory.Start(ctx.Done())
		go dc.Run(ctx, 5)
		go rc.Run(ctx, 5)
		go nc.Run(ctx, 10)
		sc.Run(ctx, 1)
		return nil
	})
	cmd.Flags().BoolVar(&finishDeletions, "finish-pod-deletions", true, "delete a pod marked for deletion for good (off where a kubelet stand-in does it)")
	cmd.Flags().StringVar(&rootCAFile, "root-ca-file", "", "publish this CA certificate as every namespace's kube-root-ca.crt ConfigMap")
	return cmd
}

// finishPodDeletions does the one thing of a kubelet the harness needs: once a pod bound to a
// node is marked for deletion, the kubelet stops its containers and deletes it for good (grace
// period 0). No kubelet runs here, and without this a deleted namespace that held a Deployment's
// pods would never go.
func finishPodDeletions(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) {
	finish := func(obj any) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.DeletionTimestamp == nil || pod.Spec.NodeName == "" {
			return
		}
		zero := int64(0)
		_ = client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	}
	factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    finish,
		UpdateFunc: func(_, obj any) { finish(obj) },
	})
}
