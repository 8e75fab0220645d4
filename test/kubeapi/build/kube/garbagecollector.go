package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

// newGarbageCollectorCommand runs Kubernetes' garbage collector (pkg/controller/garbagecollector)
// as kube-controller-manager builds and starts it (cmd/kube-controller-manager/app
// controllermanager.go CreateControllerContext and core.go startGarbageCollectorController):
// a discovery-backed REST mapper reset every 30 s, typed and metadata informers, the release's
// ignored resources, 20 workers (--concurrent-gc-syncs) and a 30 s resync of the resources it
// watches. An object whose owners are all gone is deleted, as in a cluster: a deleted job's
// Workload, JobSet, Jobs and pods go with it.
func newGarbageCollectorCommand() *cobra.Command {
	const workers, syncPeriod = 20, 30 * time.Second
	return controllerCommand("kube-garbage-collector", func(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error {
		gcCfg := *cfg
		gcCfg.QPS *= 2 // each deletion takes two calls (startGarbageCollectorController)
		meta, err := metadata.NewForConfig(&gcCfg)
		if err != nil {
			return err
		}
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
		go func() {
			for t := time.NewTicker(syncPeriod); ; {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					mapper.Reset()
				}
			}
		}()
		started := make(chan struct{})
		objects := informerfactory.NewInformerFactory(factory, metadatainformer.NewSharedInformerFactory(meta, 0))
		gc, err := garbagecollector.NewGarbageCollector(ctx, client, meta, mapper, garbagecollector.DefaultIgnoredResources(), objects, started)
		if err != nil {
			return err
		}
		objects.Start(ctx.Done())
		close(started)
		go gc.Run(ctx, workers, syncPeriod)
		gc.Sync(ctx, disc, syncPeriod)
		return nil
	})
}
