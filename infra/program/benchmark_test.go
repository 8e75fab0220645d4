package program

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/mpioperator"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/internal/k8sobj"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestMPIOperator: the operator is the release the test server's CRD comes from, its
// permissions are exactly the release's ClusterRole (read from the module cache), and its
// controller runs on the system nodes and outlives them in no destroy.
func TestMPIOperator(t *testing.T) {
	if mpioperator.Version != kubeapi.MPIOperatorVersion || !strings.HasSuffix(mpioperator.Image, ":"+strings.TrimPrefix(mpioperator.Version, "v")) ||
		!strings.Contains(mpioperator.CRDURL, "/"+mpioperator.Version+"/") {
		t.Errorf("operator %s, image %s, CRD %s; the test server installs the CRD of %s", mpioperator.Version, mpioperator.Image, mpioperator.CRDURL, kubeapi.MPIOperatorVersion)
	}
	mod, err := kubeapi.ModuleDir(kubeapi.MPIOperatorModule)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(mod, "manifests", "base", "cluster-role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var upstream []mpioperator.Rule
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	for {
		var doc struct {
			Metadata struct{ Name string }
			Rules    []struct {
				APIGroups []string `yaml:"apiGroups"`
				Resources []string
				Verbs     []string
			}
		}
		if dec.Decode(&doc) != nil {
			break
		}
		if doc.Metadata.Name != mpioperator.Name {
			continue // the aggregated Kubeflow roles for users, not the controller's
		}
		for _, r := range doc.Rules {
			upstream = append(upstream, mpioperator.Rule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs})
		}
	}
	// Every rule gpucluster grants is one of the release's, narrowed to where it applies; none
	// lets the controller read secrets or exec into pods outside the jobs' namespace.
	for _, set := range [][]mpioperator.Rule{mpioperator.JobRules, mpioperator.LockRules, mpioperator.ClusterRules} {
		for _, r := range set {
			if !slices.ContainsFunc(upstream, func(u mpioperator.Rule) bool { return covers(u, r) }) {
				t.Errorf("rule %v is not one of the release's ClusterRole %v", r, upstream)
			}
		}
	}
	for _, r := range mpioperator.ClusterRules {
		if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "pods/exec") || slices.Contains(r.Resources, "pods") {
			t.Errorf("cluster-wide rule %v", r)
		}
	}

	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		deployments := slices.DeleteFunc(ev.ofType("kubernetes:apps/v1:Deployment"), func(r offline.Resource) bool { return !strings.HasSuffix(r.Name, "-mpi-operator-controller") })
		files := ev.ofType("kubernetes:yaml/v2:ConfigFile")
		if !ev.spec.Benchmarks.Enabled {
			if len(deployments)+len(files) != 0 {
				t.Errorf("%s: the MPI operator is installed though the stack does not enable benchmarks", filepath.Base(file))
			}
			continue
		}
		dep, crd := one(t, deployments, "operator Deployments"), one(t, files, "CRD ConfigFiles")
		if crd.Input("file") != mpioperator.CRDURL || !dependsOn(dep, crd) {
			t.Errorf("%s: CRD %v; the controller must depend on it", filepath.Base(file), crd.Input("file"))
		}
		pod := dep.Input("spec").(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		c := pod["containers"].([]any)[0].(map[string]any)
		if !slices.Contains(c["args"].([]any), any("--namespace="+topology.BenchmarkNamespace)) {
			t.Errorf("%s: the operator watches every namespace: %v", filepath.Base(file), c["args"])
		}
		// The component grants the rules where they apply: Roles in the jobs' and its own namespace.
		for kind, want := range map[string]map[string][]mpioperator.Rule{
			"kubernetes:rbac.authorization.k8s.io/v1:Role":        {topology.BenchmarkNamespace: mpioperator.JobRules, mpioperator.Name: mpioperator.LockRules},
			"kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": {"": mpioperator.ClusterRules},
		} {
			got := map[string][]mpioperator.Rule{}
			for _, r := range ev.ofType(kind) {
				meta := r.Input("metadata").(map[string]any)
				if meta["name"] != mpioperator.Name {
					continue
				}
				ns, _ := meta["namespace"].(string)
				for _, raw := range r.Input("rules").([]any) {
					rule := raw.(map[string]any)
					got[ns] = append(got[ns], mpioperator.Rule{APIGroups: strs(rule["apiGroups"]), Resources: strs(rule["resources"]), Verbs: strs(rule["verbs"])})
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s mpi-operator rules by namespace %v, want %v", filepath.Base(file), kind, got, want)
			}
		}
		if str(pod["nodeSelector"]) != str(map[string]any{topology.LabelPool: topology.SystemPool}) || c["image"] != mpioperator.Image ||
			c["securityContext"].(map[string]any)["readOnlyRootFilesystem"] != true {
			t.Errorf("%s: operator pod %v", filepath.Base(file), pod)
		}
	}
}

var (
	controllersOnce sync.Once
	controllersErr  error
)

// startControllers adds to the shared test server what turns job objects into placed pods: the
// real kube-scheduler, Kubernetes' own Job controller and garbage collector, and the real MPI
// operator, Kubeflow Trainer, JobSet and Kueue, all of the releases the project pins.
func startControllers(s *kubeapi.Server) error {
	controllersOnce.Do(func() {
		// The MPI operator runs per stack namespace (startMPIOperator), as deployed: one namespace.
		// The Trainer and JobSet run for the test binary's life, as their chart installs them.
		for _, start := range []func() error{s.StartScheduler, s.StartJobController, s.StartGarbageCollector,
			func() (err error) { _, err = s.StartJobSet(); return err }, func() (err error) { _, err = s.StartTrainer(); return err },
			// Kueue with gpucluster's resources section: the IMEX channel's DeviceClass mapping.
			func() (err error) {
				_, err = s.StartKueueWith(map[string]any{"resources": kueue.Resources()})
				return err
			},
			// The DRA driver's ComputeDomain controller, in the chart's namespace: it makes each
			// UltraServer pool's claim template when the pool's ComputeDomain is created.
			func() (err error) {
				if err = s.Create(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": dradriver.Namespace}}); err != nil {
					return err
				}
				_, err = s.StartComputeDomainController(dradriver.Namespace)
				return err
			}} {
			if controllersErr = start(); controllersErr != nil {
				return
			}
		}
	})
	return controllersErr
}

// TestBenchmarkJobsAreScheduled applies each experiment stack's benchmark objects, unchanged but
// for a namespace of their own, to the test server, where the MPI operator and the Job
// controller make their pods and the scheduler places them on Node objects that carry exactly
// what the pool's nodes register (labels, taints, allocatable GPUs, EFA devices, CPU, memory, no
// huge pages: topology.NodeAllocatable), beside the system nodes. Every worker and training pod
// must be bound, each node holding the pool's pods per node, none on a system node; once the
// workers are ready (as their kubelet would report) the operator starts the launcher, which
// must land on a system node.
func TestBenchmarkJobsAreScheduled(t *testing.T) {
	s := apiServer(t)
	if err := startControllers(s); err != nil {
		t.Fatal(err)
	}
	stacks := 0
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		if !ev.spec.Benchmarks.Enabled {
			continue
		}
		stacks++
		// The training job too: the experiment stacks name no training command.
		spec, err := topology.DeriveStack(withTraining(t, file), testDay)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) { scheduleStack(t, s, spec) })
	}
	if stacks < 7 {
		t.Errorf("%d stacks enable benchmarks; the seven experiment stacks must", stacks)
	}
}

// withTraining parses a stack file and adds a training command to its benchmark settings.
func withTraining(t *testing.T, file string) topology.Stack {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	st, err := topology.ParseStack(file, data)
	if err != nil {
		t.Fatal(err)
	}
	st.Benchmarks.TrainingCommand = []string{"train.py", "--epochs", "1"}
	return st
}

// scheduleStack runs one stack's jobs in a namespace of its own, on nodes of its own: what an
// earlier stack left (pods no kubelet will ever stop) cannot take their place.
func scheduleStack(t *testing.T, s *kubeapi.Server, spec topology.StackSpec) {
	ns := "bench-" + spec.Stack
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Create(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}))
	must(s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": ns}}))
	// What the trainer component creates: the training pods' account, and the runtimes
	// (cluster-wide: the first stack that needs one creates it).
	must(s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": topology.TrainingServiceAccount, "namespace": ns},
		"automountServiceAccountToken": false}))
	for _, rt := range trainer.Runtimes(spec.Pools, spec.Labels()) {
		obj := map[string]any{"apiVersion": topology.TrainerAPIVersion, "kind": "ClusterTrainingRuntime",
			"metadata": map[string]any{"name": rt.Name, "labels": rt.Labels}, "spec": rt.Spec}
		if _, err := s.Get(obj); err != nil {
			must(s.Create(obj))
		}
	}
	cleanQueues := createQueues(t, s, spec, ns)
	defer cleanQueues()
	stop, err := startMPIOperator(s, ns)
	must(err)
	defer stop()
	nodePool := map[string]string{}
	var applied []map[string]any
	// Afterwards nothing of this stack may take a later stack's nodes, nor its pods run on them.
	defer func() {
		for _, obj := range applied {
			s.Delete(obj)
		}
		if err := s.DrainPods(ns, "", 30*time.Second); err != nil {
			t.Error(err)
		}
		for name := range nodePool {
			s.Delete(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}})
		}
	}()
	// The system nodes, untainted.
	for i := range spec.Cluster.SystemNodes.Count {
		name := fmt.Sprintf("%s-system-%d", spec.Stack, i)
		nodePool[name] = topology.SystemPool
		must(s.CreateReadyNode(node(name, map[string]string{topology.LabelPool: topology.SystemPool}, nil, kubeapi.SystemNodeAllocatable)))
	}
	// Each pool's nodes, with the network-node labels EKS gives them where EC2 reports the
	// type's topology: all under one layer-3 network node; and where the jobs are packed by it,
	// one spare node fewer, each under a layer-3 node of its own. A job packed as asked takes
	// the one layer-3 node that holds it whole; one that is not (Kueue fills the emptiest
	// domains first) spreads onto the spares.
	packed := map[string][]string{}
	for _, p := range spec.Pools {
		for i := range p.Benchmark.Nodes {
			name := fmt.Sprintf("%s-%s-node-%d", spec.Stack, p.Name, i)
			nodePool[name] = p.Name
			packed[p.Name] = append(packed[p.Name], name)
			must(s.CreateReadyNode(node(name, networkNodes(p, "a"), p.Taints, topology.NodeAllocatable(p))))
		}
		if p.Benchmark.Queue != nil && p.Benchmark.Queue.Topology != nil {
			for i := range p.Benchmark.Nodes - 1 {
				// Named to come first where Kueue breaks ties by name.
				name := fmt.Sprintf("%s-%s-a-spare-%d", spec.Stack, p.Name, i)
				nodePool[name] = p.Name
				must(s.CreateReadyNode(node(name, networkNodes(p, fmt.Sprint("spare", i)), p.Taints, topology.NodeAllocatable(p))))
			}
		}
	}
	for _, p := range spec.Pools {
		objs, err := benchjobs.Objects(spec, p)
		must(err)
		byKind := map[string]map[string]any{}
		for _, obj := range objs {
			// No pod of a job mounts a service-account token: none calls the API (a TrainJob's
			// pods through their account: checked on the pods the Trainer makes).
			for _, spec := range k8sobj.PodSpecs(obj) {
				if obj["kind"] != "TrainJob" && spec["automountServiceAccountToken"] != false {
					t.Errorf("%s %v: a pod mounts a service-account token it never uses", obj["kind"], obj["metadata"])
				}
			}
			if q := p.Benchmark.Queue; q != nil && obj["metadata"].(map[string]any)["labels"].(map[string]any)[topology.LabelQueueName] != q.Name {
				t.Errorf("%s %v is in no queue of the pool", obj["kind"], obj["metadata"])
			}
			obj["metadata"].(map[string]any)["namespace"] = ns
			byKind[obj["kind"].(string)] = obj
		}
		// The all-reduce is admitted first and holds every node of the pool.
		mpi := byKind["MPIJob"]
		cd := p.TrainingPod.ComputeDomain
		if cd != nil {
			// The pool's ComputeDomain, as the stack creates it; its controller makes the claim
			// template, which Kueue reads to count each worker's IMEX channel. Deleting the
			// domain deletes the template (the controller removes their finalizers).
			domain := dradriver.ComputeDomain(*cd, ns, nil)
			must(s.Create(domain))
			applied = append(applied, domain)
			waitClaimTemplate(t, s, ns, *cd)
		}
		must(s.Create(mpi))
		applied = append(applied, mpi)
		sel := "training.kubeflow.org/job-name=" + mpi["metadata"].(map[string]any)["name"].(string)
		if cd != nil {
			checkClaimingWorkers(t, s, ns, sel+",training.kubeflow.org/job-role=worker", p, *cd)
			// A second run of it, in the same queue, finds every channel taken and waits whole.
			second := maps.Clone(mpi)
			md := maps.Clone(mpi["metadata"].(map[string]any))
			md["name"] = md["name"].(string) + "-again"
			second["metadata"] = md
			must(s.Create(second))
			applied = append(applied, second)
			checkWaiting(t, s, ns, second, p)
			continue
		}
		workers := checkPlaced(t, s, ns, sel+",training.kubeflow.org/job-role=worker", p.Benchmark.NCCL.Workers, p, nodePool, packed[p.Name])
		train := byKind["TrainJob"]
		if train != nil {
			// The training job, in the same queue, finds no room and waits whole: suspended,
			// no pod at all.
			must(s.Create(train))
			applied = append(applied, train)
			checkWaiting(t, s, ns, train, p)
		}
		for _, w := range workers {
			must(s.MarkPodReady(ns, w.Name))
		}
		launcher, err := s.WaitPods(ns, sel+",training.kubeflow.org/job-role=launcher", 1, len(nodePool), 60*time.Second)
		must(err)
		if nodePool[launcher[0].Node] != topology.SystemPool {
			t.Errorf("launcher %s on %q (%s), want a system node", launcher[0].Name, launcher[0].Node, launcher[0].Reason)
		}
		checkLauncher(t, s, ns, launcher[0].Name)
		// The run is over: its pods go (only its own: Kueue may admit the training job at
		// once), and Kueue admits the training job whole.
		must(s.Delete(mpi))
		must(s.DrainPods(ns, sel, 30*time.Second))
		if train != nil {
			job := train["metadata"].(map[string]any)["name"].(string)
			pods := checkPlaced(t, s, ns, benchjobs.LabelJobSetName+"="+job, p.Benchmark.Train.NumNodes, p, nodePool, packed[p.Name])
			for _, pod := range pods {
				checkTrainingPod(t, s, ns, pod.Name, p)
			}
		}
	}
}

// waitClaimTemplate waits for the DRA driver's controller to make a ComputeDomain's claim template
// for its workload pods, in the domain's namespace, for the DeviceClass Kueue's configuration maps.
func waitClaimTemplate(t *testing.T, s *kubeapi.Server, ns string, cd topology.ComputeDomainSpec) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		obj, err := s.Get(map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
			"metadata": map[string]any{"name": cd.ClaimTemplate, "namespace": ns}})
		if err == nil {
			req, _ := obj["spec"].(map[string]any)["spec"].(map[string]any)["devices"].(map[string]any)["requests"].([]any)
			if len(req) != 1 || req[0].(map[string]any)["exactly"].(map[string]any)["deviceClassName"] != topology.ComputeDomainChannelDeviceClass {
				t.Fatalf("the controller's claim template %s asks for %v, want one %s", cd.ClaimTemplate, req, topology.ComputeDomainChannelDeviceClass)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DRA driver's controller made no claim template %s for ComputeDomain %s in 60 s: %v\n%s", cd.ClaimTemplate, cd.Name, err, s.ControllerLogs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkClaimingWorkers: on an UltraServer pool, once Kueue admits the job (each worker's IMEX
// channel counted against the pool's quota), the MPI operator makes every worker, each claiming
// the pool's ComputeDomain channel from the claim template the DRA driver's controller made.
// Named deviation: the test cluster runs no DRA kubelet plugin (it needs GPUs on an NVLink
// fabric), so nothing allocates the channel and the workers stay unscheduled: their admission and
// shape are what is proven here, not their placement.
func checkClaimingWorkers(t *testing.T, s *kubeapi.Server, ns, selector string, p topology.PoolSpec, cd topology.ComputeDomainSpec) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := s.Pods(ns, selector)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) == p.Benchmark.NCCL.Workers {
			for _, pod := range pods {
				if pod.Node != "" {
					t.Errorf("worker %s bound to %s although nothing allocated its IMEX channel", pod.Name, pod.Node)
				}
				obj, err := s.Get(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": pod.Name, "namespace": ns}})
				if err != nil {
					t.Fatal(err)
				}
				spec := obj["spec"].(map[string]any)
				claims, _ := spec["resourceClaims"].([]any)
				c0 := spec["containers"].([]any)[0].(map[string]any)
				used, _ := c0["resources"].(map[string]any)["claims"].([]any)
				if len(claims) != 1 || claims[0].(map[string]any)["resourceClaimTemplateName"] != cd.ClaimTemplate ||
					len(used) != 1 || used[0].(map[string]any)["name"] != topology.ComputeDomainClaim {
					t.Errorf("worker %s claims %v, uses %v; want the channel of %s", pod.Name, claims, used, cd.Name)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers made for an UltraServer pool", len(pods), p.Benchmark.NCCL.Workers)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// networkNodes are a pool node's labels: the pool's, and the network nodes EKS labels it with
// where EC2 reports its type's topology (one layer-1 and layer-2 node for the pool; the
// layer-3 node named by group, and layer 4 below it on four-layer types).
func networkNodes(p topology.PoolSpec, group string) map[string]string {
	labels := maps.Clone(p.Labels)
	for l := 1; l <= p.Instance.NetworkNodeLayers; l++ {
		id := fmt.Sprintf("nn-%s-l%d", p.Name, l)
		if l >= 3 {
			id += "-" + group
		}
		labels[fmt.Sprintf("%s%d", topology.LabelNetworkNodeLayerPrefix, l)] = id
	}
	return labels
}

// createQueues creates a stack's Kueue objects, its LocalQueues in the stack's namespace; the
// returned function deletes them and waits until Kueue has let them go (its finalizers hold a
// queue while it has admitted jobs, and a flavor while a queue uses it), so that the next stack
// can create its own of the same names.
//
// It deletes one object at a time, each after everything that refers to it is gone, as pulumi
// destroy deletes a dependent before what it depends on. Deleting them all at once races Kueue
// v0.19.2: a deleted Topology's finalizer is removed only by a reconcile that runs one
// UpdatesBatchPeriod (1 s) after its last flavor's delete event
// (pkg/controller/tas/topology_controller.go, resourceFlavorHandler.Delete) and that reads the
// flavor cache another event handler clears; on a loaded machine the reconcile can run first,
// find the flavor still cached, and never run again, leaving the Topology in Terminating
// (kubernetes-sigs/kueue#12572, open; the fix proposed in kueue#13186 requeues such a Topology).
func createQueues(t *testing.T, s *kubeapi.Server, spec topology.StackSpec, ns string) func() {
	t.Helper()
	objs := kueue.Objects(spec.Pools, spec.Labels())
	var created []map[string]any
	cleanup := func() {
		for _, obj := range slices.Backward(created) {
			s.Delete(obj)
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				if _, err := s.Get(obj); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("%s %v is still there a minute after its deletion", obj["kind"], obj["metadata"])
					break
				}
			}
		}
	}
	for _, obj := range objs {
		if obj["kind"] == "LocalQueue" {
			obj["metadata"].(map[string]any)["namespace"] = ns
		}
		if err := s.Create(obj); err != nil {
			cleanup()
			t.Fatal(err)
		}
		created = append(created, obj)
	}
	return cleanup
}

// workloads says what Kueue made of a namespace's jobs: each Workload's conditions.
func workloads(s *kubeapi.Server, ns string) string {
	wls, err := s.List(map[string]any{"apiVersion": topology.KueueAPIVersion, "kind": "Workload", "metadata": map[string]any{"namespace": ns}})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, wl := range wls {
		status, _ := wl["status"].(map[string]any)
		fmt.Fprintf(&b, "workload %v:", wl["metadata"].(map[string]any)["name"])
		conds, _ := status["conditions"].([]any)
		for _, c := range conds {
			c := c.(map[string]any)
			fmt.Fprintf(&b, " %v=%v (%v: %v);", c["type"], c["status"], c["reason"], c["message"])
		}
		b.WriteString("\n")
	}
	for _, kind := range []struct{ apiVersion, kind string }{{topology.TrainerAPIVersion, "TrainJob"}, {"jobset.x-k8s.io/v1alpha2", "JobSet"}, {"batch/v1", "Job"}} {
		objs, _ := s.List(map[string]any{"apiVersion": kind.apiVersion, "kind": kind.kind, "metadata": map[string]any{"namespace": ns}})
		for _, o := range objs {
			spec, _ := o["spec"].(map[string]any)
			fmt.Fprintf(&b, "%s %v: suspend %v, status %v\n", kind.kind, o["metadata"].(map[string]any)["name"], spec["suspend"], o["status"])
		}
	}
	return b.String()
}

// checkWaiting: a job Kueue has not admitted is suspended and has no pod: a TrainJob
// (spec.suspend; its pods carry its JobSet's name) or an MPIJob (spec.runPolicy.suspend; its pods
// carry its job name).
func checkWaiting(t *testing.T, s *kubeapi.Server, ns string, job map[string]any, p topology.PoolSpec) {
	t.Helper()
	name := job["metadata"].(map[string]any)["name"].(string)
	time.Sleep(5 * time.Second) // Kueue decides in milliseconds
	got, err := s.Get(job)
	if err != nil {
		t.Fatal(err)
	}
	spec, selector := got["spec"].(map[string]any), benchjobs.LabelJobSetName+"="+name
	if job["kind"] == "MPIJob" {
		spec, _ = spec["runPolicy"].(map[string]any)
		selector = "training.kubeflow.org/job-name=" + name
	}
	if spec["suspend"] != true {
		t.Errorf("%s runs while another job holds pool %s: %v", name, p.Name, got["spec"])
	}
	if pods, err := s.Pods(ns, selector); err != nil || len(pods) > 0 {
		t.Errorf("%s has %d pods while it waits (%v)", name, len(pods), err)
	}
}

// checkLauncher: the launcher the operator made runs with the securityContext gpucluster gave it.
func checkLauncher(t *testing.T, s *kubeapi.Server, ns, name string) {
	t.Helper()
	pod, err := s.Get(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": ns}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)
	if sc["allowPrivilegeEscalation"] != false || str(sc["capabilities"]) != str(map[string]any{"drop": []any{"ALL"}}) ||
		str(sc["seccompProfile"]) != str(map[string]any{"type": "RuntimeDefault"}) {
		t.Errorf("launcher %s securityContext %v", name, sc)
	}
}

// startMPIOperator runs the MPI operator for one namespace with exactly the permissions gpucluster
// grants it (mpioperator's JobRules and LockRules as Roles, ClusterRules as a ClusterRole, bound
// to its service account), its lock in that namespace too, and its service account's token: a
// rule missing from them leaves the MPIJobs without pods, and the test fails.
func startMPIOperator(s *kubeapi.Server, ns string) (func(), error) {
	meta := func(name, namespace string) map[string]any {
		m := map[string]any{"name": name}
		if namespace != "" {
			m["namespace"] = namespace
		}
		return m
	}
	rules := func(rs []mpioperator.Rule) []any {
		var out []any
		for _, r := range rs {
			out = append(out, map[string]any{"apiGroups": r.APIGroups, "resources": r.Resources, "verbs": r.Verbs})
		}
		return out
	}
	subjects := []any{map[string]any{"kind": "ServiceAccount", "name": mpioperator.Name, "namespace": ns}}
	cluster := mpioperator.Name + "-" + ns // cluster-scoped: one per test namespace
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(mpioperator.Name, ns)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(mpioperator.Name+"-jobs", ns), "rules": rules(mpioperator.JobRules)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(mpioperator.Name+"-lock", ns), "rules": rules(mpioperator.LockRules)},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(cluster, ""), "rules": rules(mpioperator.ClusterRules)},
	}
	for _, role := range []string{mpioperator.Name + "-jobs", mpioperator.Name + "-lock"} {
		objs = append(objs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(role, ns),
			"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role}, "subjects": subjects})
	}
	objs = append(objs, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(cluster, ""),
		"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster}, "subjects": subjects})
	for _, obj := range objs {
		if err := s.Create(obj); err != nil {
			return nil, err
		}
	}
	token, err := s.ServiceAccountToken(ns, mpioperator.Name)
	if err != nil {
		return nil, err
	}
	return s.StartMPIOperator(ns, ns, token)
}

// checkTrainingPod reads a pod the Trainer made from a pool's TrainJob: torchrun's PET_*
// variables from the Trainer, the pool's NCCL environment, the pod's resources, hostIPC as the
// topology decided, and no service-account token.
func checkTrainingPod(t *testing.T, s *kubeapi.Server, ns, name string, p topology.PoolSpec) {
	t.Helper()
	pod, err := s.Get(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": ns}})
	if err != nil {
		t.Fatal(err)
	}
	spec := pod["spec"].(map[string]any)
	var c map[string]any
	for _, x := range spec["containers"].([]any) {
		if x.(map[string]any)["name"] == topology.TrainerContainer {
			c = x.(map[string]any)
		}
	}
	if c == nil {
		t.Fatalf("%s: no %s container", name, topology.TrainerContainer)
	}
	env := map[string]any{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e["value"]
		if e["valueFrom"] != nil {
			env[e["name"].(string)] = "valueFrom"
		}
	}
	want := map[string]any{"PET_NNODES": fmt.Sprint(p.Benchmark.Train.NumNodes), "PET_NPROC_PER_NODE": fmt.Sprint(p.TrainingPod.GPUsPerPod), "PET_NODE_RANK": "valueFrom"}
	for _, e := range p.TrainingPod.Env {
		want[e.Name] = e.Value
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s: %s=%v, want %v", name, k, env[k], v)
		}
	}
	if env["PET_MASTER_ADDR"] == nil {
		t.Errorf("%s: no PET_MASTER_ADDR", name)
	}
	limits := c["resources"].(map[string]any)["limits"].(map[string]any)
	for res, n := range p.TrainingPod.Resources {
		if limits[res] != fmt.Sprint(n) {
			t.Errorf("%s: limit %s=%v, want %d", name, res, limits[res], n)
		}
	}
	if hostIPC, _ := spec["hostIPC"].(bool); hostIPC != p.TrainingPod.HostIPC {
		t.Errorf("%s: hostIPC %v, want %v", name, hostIPC, p.TrainingPod.HostIPC)
	}
	for _, v := range spec["volumes"].([]any) {
		if strings.HasPrefix(v.(map[string]any)["name"].(string), "kube-api-access") {
			t.Errorf("%s mounts a service-account token (%v)", name, v)
		}
	}
}

// checkPlaced waits for a controller's n pods and checks where the scheduler put them: all
// bound, on the pool's nodes, the pool's pods per node on each of want (packed there, not on
// the pool's spare nodes).
func checkPlaced(t *testing.T, s *kubeapi.Server, ns, selector string, n int, pool topology.PoolSpec, nodePool map[string]string, want []string) []kubeapi.Pod {
	t.Helper()
	pods, err := s.WaitPods(ns, selector, n, len(nodePool), 60*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, workloads(s, ns))
	}
	if len(pods) != n {
		t.Errorf("%d pods match %s, want %d", len(pods), selector, n)
	}
	perNode := map[string]int{}
	for _, p := range pods {
		switch where := nodePool[p.Node]; {
		case p.Node == "":
			t.Errorf("%s was not scheduled: %s", p.Name, p.Reason)
		case where != pool.Name:
			t.Errorf("%s on %s (pool %q), want pool %s", p.Name, p.Node, where, pool.Name)
		default:
			perNode[p.Node]++
		}
	}
	for _, node := range want {
		if perNode[node] != pool.TrainingPod.PodsPerNode {
			t.Errorf("node %s holds %d pod(s) of %s, want the pool's %d per node", node, perNode[node], selector, pool.TrainingPod.PodsPerNode)
		}
	}
	return pods
}

// node is a Node object as a pool's kubelet registers it.
func node(name string, labels map[string]string, taints []topology.Taint, allocatable map[string]string) map[string]any {
	var ts []map[string]any
	for _, t := range taints {
		ts = append(ts, map[string]any{"key": t.Key, "value": t.Value, "effect": t.Effect})
	}
	return kubeapi.Node(name, labels, ts, allocatable)
}

// covers says whether a release rule grants everything r grants.
func covers(release, r mpioperator.Rule) bool {
	all := func(have, want []string) bool {
		for _, w := range want {
			if !slices.Contains(have, w) && !slices.Contains(have, "*") {
				return false
			}
		}
		return true
	}
	return all(release.APIGroups, r.APIGroups) && all(release.Resources, r.Resources) && all(release.Verbs, r.Verbs)
}

// strs is a list of strings as the program's inputs hold it.
func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
