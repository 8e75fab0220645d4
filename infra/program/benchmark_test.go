package program

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/mpioperator"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/internal/kubeapi"
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
	if fmt.Sprint(upstream) != fmt.Sprint(mpioperator.Rules) {
		t.Errorf("the controller's rules differ from the release's ClusterRole:\n got  %v\n want %v", mpioperator.Rules, upstream)
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
		if str(pod["nodeSelector"]) != str(map[string]any{topology.LabelPool: topology.SystemPool}) || c["image"] != mpioperator.Image ||
			c["securityContext"].(map[string]any)["readOnlyRootFilesystem"] != true {
			t.Errorf("%s: operator pod %v", filepath.Base(file), pod)
		}
	}
}

var (
	schedOnce sync.Once
	schedErr  error
)

// TestBenchmarkJobsAreScheduled runs the real kube-scheduler over Node objects that carry
// exactly what each pool's nodes register (labels, taints, allocatable GPUs, EFA devices, CPU,
// memory, no huge pages: topology.NodeAllocatable) plus the system nodes, and creates the pods
// the MPI operator and the Job controller would create from each stack's jobs (the templates,
// unchanged, replicated). Every worker and training pod must be bound, each node holding the
// pool's pods per node and none on a system node; the launcher goes to a system node.
func TestBenchmarkJobsAreScheduled(t *testing.T) {
	s := apiServer(t)
	schedOnce.Do(func() {
		if schedErr = s.StartScheduler(); schedErr == nil {
			schedErr = s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": benchjobs.Namespace}})
		}
	})
	if schedErr != nil {
		t.Fatal(schedErr)
	}
	stacks := 0
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		if !ev.spec.Benchmarks.Enabled {
			continue
		}
		stacks++
		// The training job too: the experiment stacks name no training command.
		spec, err := topology.DeriveStack(withTraining(t, file))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) { scheduleStack(t, s, spec) })
	}
	if stacks < 6 {
		t.Errorf("%d stacks enable benchmarks; the six experiment stacks must", stacks)
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

func scheduleStack(t *testing.T, s *kubeapi.Server, spec topology.StackSpec) {
	var created []map[string]any
	defer func() {
		for i := len(created) - 1; i >= 0; i-- {
			s.Delete(created[i])
		}
	}()
	create := func(obj map[string]any, ready bool) {
		t.Helper()
		var err error
		if ready {
			err = s.CreateReadyNode(obj)
		} else {
			err = s.Create(obj)
		}
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, obj)
	}
	nodePool := map[string]string{}
	// The system nodes: m7i.large (2 vCPU, 8 GiB) less EKS's reservations, untainted.
	for i := range spec.Cluster.SystemNodes.Count {
		name := fmt.Sprintf("system-%d", i)
		nodePool[name] = topology.SystemPool
		create(node(name, map[string]string{topology.LabelPool: topology.SystemPool}, nil,
			map[string]string{"cpu": "1930m", "memory": "7000Mi", "pods": "29"}), true)
	}
	for _, p := range spec.Pools {
		for i := range p.Benchmark.Nodes {
			name := fmt.Sprintf("%s-%d", p.Name, i)
			nodePool[name] = p.Name
			create(node(name, p.Labels, p.Taints, topology.NodeAllocatable(p)), true)
		}
	}
	// One job at a time, as a benchmark runs: each asks for every GPU of the pool.
	for _, p := range spec.Pools {
		objs, err := benchjobs.Objects(spec, p)
		if err != nil {
			t.Fatal(err)
		}
		kinds := 0
		for _, obj := range objs {
			if pods := podsOf(obj); len(pods) > 0 {
				kinds++
				schedulePods(t, s, pods, p, spec.Pools, nodePool)
			}
		}
		if kinds != 2 {
			t.Errorf("pool %s: %d jobs with pods, want the MPIJob and the training Job", p.Name, kinds)
		}
	}
}

// schedulePods creates the pods of one job, waits for the scheduler and checks where each went.
func schedulePods(t *testing.T, s *kubeapi.Server, pods []map[string]any, pool topology.PoolSpec, pools []topology.PoolSpec, nodePool map[string]string) {
	t.Helper()
	var names []string
	for _, pod := range pods {
		if err := s.Create(pod); err != nil {
			t.Fatal(err)
		}
		names = append(names, pod["metadata"].(map[string]any)["name"].(string))
	}
	defer func() {
		for _, pod := range pods {
			// Gone at once: no kubelet will confirm the end of a pod bound to a node.
			s.DeleteNow(pod)
		}
	}()
	bound, err := s.WaitBound(benchjobs.Namespace, names, len(nodePool), 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, name := range names {
		b, role := bound[name], podRole(name)
		if b.Node == "" {
			t.Errorf("%s (%s) was not scheduled: %s", name, role, b.Reason)
			continue
		}
		where := nodePool[b.Node]
		switch {
		case role == "launcher":
			if where != topology.SystemPool {
				t.Errorf("launcher %s on %s, want a system node", name, b.Node)
			}
		case where != pool.Name:
			t.Errorf("%s %s on %s (pool %q), want pool %s", role, name, b.Node, where, pool.Name)
		default:
			perNode[b.Node]++
		}
	}
	for n, p := range nodePool {
		if p == pool.Name && perNode[n] != pool.TrainingPod.PodsPerNode {
			t.Errorf("node %s holds %d pod(s) of %s, want the pool's %d per node", n, perNode[n], names[len(names)-1], pool.TrainingPod.PodsPerNode)
		}
	}
}

// node is a Node object as a pool's kubelet registers it.
func node(name string, labels map[string]string, taints []topology.Taint, allocatable map[string]string) map[string]any {
	l := map[string]any{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	var ts []any
	for _, t := range taints {
		ts = append(ts, map[string]any{"key": t.Key, "value": t.Value, "effect": t.Effect})
	}
	res := map[string]any{}
	for k, v := range allocatable {
		res[k] = v
	}
	return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name, "labels": l},
		"spec": map[string]any{"taints": ts}, "status": map[string]any{"capacity": res, "allocatable": res}}
}

// podsOf are the pods a controller makes of a benchmark object: the MPI operator's launcher
// and workers "<job>-launcher-0", "<job>-worker-<i>", the Job controller's "<job>-<i>".
func podsOf(obj map[string]any) []map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	md := obj["metadata"].(map[string]any)
	job := md["name"].(string)
	var out []map[string]any
	add := func(name string, tpl map[string]any) {
		meta, _ := tpl["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		out = append(out, map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": benchjobs.Namespace, "labels": labels, "annotations": annotations},
			"spec":     tpl["spec"]})
	}
	switch obj["kind"] {
	case "MPIJob":
		replicas := spec["mpiReplicaSpecs"].(map[string]any)
		add(job+"-launcher-0", replicas["Launcher"].(map[string]any)["template"].(map[string]any))
		worker := replicas["Worker"].(map[string]any)
		for i := range int(worker["replicas"].(float64)) {
			add(fmt.Sprintf("%s-worker-%d", job, i), worker["template"].(map[string]any))
		}
	case "Job":
		for i := range int(spec["parallelism"].(float64)) {
			add(fmt.Sprintf("%s-%d", job, i), spec["template"].(map[string]any))
		}
	}
	return out
}

func podRole(name string) string {
	switch {
	case strings.Contains(name, "-launcher-"):
		return "launcher"
	case strings.Contains(name, "-worker-"):
		return "worker"
	}
	return "training"
}
