package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// newKubeletStandInCommand plays, for the API server, the part of every node's kubelet that the
// real-engine tests need. A pod whose images the harness builds (--run: the operators) runs for
// real, with its own command, environment, volumes and service account, in a network namespace
// of its own (podrunner.go). Any other pod bound to a node starts at once on paper — phase
// Running, each init container terminated with exit code 0, each container running, started and
// ready, a pod IP (the node's address for a host-network pod) — as if its images were pulled and
// its probes passed: a stand-in, no container runs (the GPU nodes' agents, Karpenter, which needs
// AWS). It lets what waits on readiness in a cluster (the kubernetes provider's Deployment and
// DaemonSet awaits, the endpoints controllers, a Service's await on its endpoints) go on as it
// would on EKS. A pod marked for deletion is stopped and then deleted for good (grace period 0),
// as the kubelet's last step of a deletion. Pods bound to a node another kubelet plays
// (--leave-nodes-with-annotation: kwok's nodes) are that one's, and the stand-in leaves them alone;
// the pods of a node that no longer exists stay the stand-in's, whose deletions it finishes.
func newKubeletStandInCommand() *cobra.Command {
	var runFlags []string
	var apiHost, apiPort, stateDir, leave string
	cmd := controllerCommand("kubelet-stand-in", func(ctx context.Context, _ *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory) error {
		images, err := parseRunFlag(runFlags)
		if err != nil {
			return err
		}
		if len(images) > 0 && (apiHost == "" || apiPort == "" || stateDir == "") {
			return fmt.Errorf("--run needs --api-server-host, --api-server-port and --state-dir")
		}
		leaveKey, leaveValue, leaveSome := strings.Cut(leave, "=")
		if leave != "" && (!leaveSome || leaveKey == "") {
			return fmt.Errorf("--leave-nodes-with-annotation %q: want key=value", leave)
		}
		r := &runner{client: client, images: images, apiHost: apiHost, apiPort: apiPort, dir: stateDir, pods: map[types.UID]*podRun{}}
		defer r.stopAll()
		pods := factory.Core().V1().Pods()
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		enqueue := func(obj any) {
			pod, ok := obj.(*v1.Pod)
			if ok && pod.Spec.NodeName != "" && (pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodPending) {
				if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
					queue.Add(key)
				}
			}
		}
		pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				if pod, ok := obj.(*v1.Pod); ok && r.running(pod.UID) {
					go r.stop(pod.UID)
				}
			}})
		nodes := factory.Core().V1().Nodes()
		nodes.Informer() // registered before the factory starts
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		ips := &podIPs{next: map[string]int{}}
		go func() {
			<-ctx.Done()
			queue.ShutDown()
		}()
		for {
			key, quit := queue.Get()
			if quit {
				return nil
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil || pod.Spec.NodeName == "" {
					return nil // gone, or not a node's yet
				}
				if node, err := nodes.Lister().Get(pod.Spec.NodeName); err == nil && leaveSome && node.Annotations[leaveKey] == leaveValue {
					return nil // another kubelet's node
				}
				if pod.DeletionTimestamp != nil {
					go finishDeletion(ctx, client, r, pod)
					return nil
				}
				if pod.Status.Phase != v1.PodPending {
					return nil
				}
				node, err := nodes.Lister().Get(pod.Spec.NodeName)
				if err != nil {
					return err
				}
				if r.runs(pod) {
					r.ensure(ctx, pod, node)
					return nil
				}
				start(pod, node, ips)
				_, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				klog.FromContext(ctx).Error(err, "starting pod", "pod", key)
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	})
	cmd.Flags().StringArrayVar(&runFlags, "run", nil, "image=/entrypoint=binary[=/dir:hostdir ...]: run the pods of this image with this binary, and the directories of the image its program reads (repeatable)")
	cmd.Flags().StringVar(&apiHost, "api-server-host", "", "the API server's address as the pods reach it (KUBERNETES_SERVICE_HOST): the host end of every pod's veth pair, the pods' gateway")
	cmd.Flags().StringVar(&apiPort, "api-server-port", "", "the API server's port (KUBERNETES_SERVICE_PORT)")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "where the pods' root directories and logs are")
	cmd.Flags().StringVar(&leave, "leave-nodes-with-annotation", "", "key=value: the pods of nodes so annotated are another kubelet's (kwok's)")
	return cmd
}

// finishDeletion is the kubelet's part of a pod's deletion: its containers stop, then the pod is
// deleted for good (grace period 0). A pod that runs nothing goes at once.
func finishDeletion(ctx context.Context, client kubernetes.Interface, r *runner, pod *v1.Pod) {
	r.stop(pod.UID)
	zero := int64(0)
	_ = client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &pod.UID}})
}

// podIPs hands out pod addresses, one range per node (10.244.<node>.0/24 by order of first use,
// as the VPC CNI gives each node addresses of its own).
type podIPs struct {
	mu    sync.Mutex
	nodes []string
	next  map[string]int
}

func (p *podIPs) allocate(node string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.next[node]; !ok {
		p.nodes = append(p.nodes, node)
		p.next[node] = 2
	}
	i := len(p.nodes) - 1
	for j, n := range p.nodes {
		if n == node {
			i = j
		}
	}
	ip := fmt.Sprintf("10.244.%d.%d", i%250, p.next[node]%250)
	p.next[node]++
	return ip
}

// start writes the status a kubelet reports once the pod's containers run and are ready.
func start(pod *v1.Pod, node *v1.Node, ips *podIPs) {
	now := metav1.NewTime(time.Now())
	hostIP := ""
	for _, a := range node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			hostIP = a.Address
		}
	}
	podIP := ips.allocate(node.Name)
	if pod.Spec.HostNetwork && hostIP != "" {
		podIP = hostIP
	}
	st := &pod.Status
	st.Phase, st.StartTime, st.PodIP, st.PodIPs = v1.PodRunning, &now, podIP, []v1.PodIP{{IP: podIP}}
	if hostIP != "" {
		st.HostIP, st.HostIPs = hostIP, []v1.HostIP{{IP: hostIP}}
	}
	st.Conditions = nil
	for _, c := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: c, Status: v1.ConditionTrue, LastTransitionTime: now})
	}
	started := true
	running := func(c v1.Container) v1.ContainerStatus {
		return v1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: &started,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}
	}
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			st.InitContainerStatuses = append(st.InitContainerStatuses, running(c)) // a sidecar keeps running
			continue
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}})
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, running(c))
	}
}
