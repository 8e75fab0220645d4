package program

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestKueue: the Kueue the program installs is the release the test server's CRDs and manager
// come from; the release's chart (read from the module cache) takes the controller's node
// selector where the program sets it, and its configuration integrates the jobs gpucluster
// renders; on every stack that enables benchmarks the controller runs on the system nodes and
// each queue object follows the chart and goes with the cluster.
func TestKueue(t *testing.T) {
	if kueue.Version != kubeapi.KueueVersion || kueue.ChartVersion != strings.TrimPrefix(kueue.Version, "v") {
		t.Errorf("kueue %s (chart %s); the test server runs %s", kueue.Version, kueue.ChartVersion, kubeapi.KueueVersion)
	}
	mod, err := kubeapi.ModuleDir(kubeapi.KueueModule)
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Version string }
	readYAML(t, filepath.Join(mod, "charts", "kueue", "Chart.yaml"), &chart)
	var values struct {
		ControllerManager map[string]any `yaml:"controllerManager"`
		ManagerConfig     struct {
			ControllerManagerConfigYaml string `yaml:"controllerManagerConfigYaml"`
		} `yaml:"managerConfig"`
	}
	readYAML(t, filepath.Join(mod, "charts", "kueue", "values.yaml"), &values)
	var config struct {
		Integrations struct{ Frameworks []string }
	}
	if err := yaml.Unmarshal([]byte(values.ManagerConfig.ControllerManagerConfigYaml), &config); err != nil {
		t.Fatal(err)
	}
	if _, ok := values.ControllerManager["nodeSelector"]; chart.Version != kueue.ChartVersion || !ok {
		t.Errorf("the release's chart is %s (controllerManager.nodeSelector: %v); gpucluster pins %s", chart.Version, ok, kueue.ChartVersion)
	}
	// The jobs gpucluster renders are MPIJobs and TrainJobs (components/benchjobs); Kueue's names
	// for their integrations, written out here, must be ones the release knows.
	if want := []string{"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"}; !slices.Equal(kueue.Frameworks, want) {
		t.Errorf("Kueue integrates %v; gpucluster's jobs are %v", kueue.Frameworks, want)
	}
	for _, f := range kueue.Frameworks {
		if !slices.Contains(config.Integrations.Frameworks, f) {
			t.Errorf("the release's configuration has no integration %s: %v", f, config.Integrations.Frameworks)
		}
	}
	checkKueueManagerConfig(t, values.ManagerConfig.ControllerManagerConfigYaml)
	// The keys gpucluster sets for two replicas are the release chart's own.
	for _, key := range []string{"replicas", "topologySpreadConstraints", "podDisruptionBudget"} {
		if _, ok := values.ControllerManager[key]; !ok {
			t.Errorf("the release's chart has no controllerManager.%s", key)
		}
	}
	if pdb, _ := values.ControllerManager["podDisruptionBudget"].(map[string]any); pdb["enabled"] != false || pdb["minAvailable"] == nil {
		t.Errorf("the release's controllerManager.podDisruptionBudget %v", pdb)
	}
	twoReplicas := 0
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		stack := filepath.Base(file)
		// One controller manager per system node, two at most: with two, spread one per node
		// by hostname and kept one at a time by the chart's PodDisruptionBudget.
		manager := map[string]any{"nodeSelector": map[string]any{topology.LabelPool: topology.SystemPool}}
		if n := ev.spec.Cluster.SystemNodes.Count; n >= 2 {
			if ev.spec.Benchmarks.Enabled {
				twoReplicas++
			}
			manager["replicas"] = float64(2)
			manager["podDisruptionBudget"] = map[string]any{"enabled": true, "minAvailable": float64(1)}
			manager["topologySpreadConstraints"] = []any{map[string]any{"maxSkew": float64(1), "topologyKey": "kubernetes.io/hostname",
				"whenUnsatisfiable": "DoNotSchedule", "labelSelector": map[string]any{"matchLabels": map[string]any{
					"app.kubernetes.io/name": "kueue", "app.kubernetes.io/instance": "kueue", "control-plane": "controller-manager"}}}}
		}
		wantValues := map[string]any{"controllerManager": manager, "managerConfig": map[string]any{"controllerManagerConfigYaml": kueue.ManagerConfig()}}
		var charts []offline.Resource
		for _, c := range ev.ofType("kubernetes:helm.sh/v4:Chart") {
			if c.Input("chart") == kueue.ChartRef {
				charts = append(charts, c)
				if c.Input("version") != kueue.ChartVersion || !reflect.DeepEqual(c.Input("values"), wantValues) {
					t.Errorf("%s: Kueue chart %v %v", stack, c.Input("version"), c.Input("values"))
				}
			}
		}
		enabled := ev.spec.Benchmarks.Enabled
		if len(charts) != map[bool]int{true: 1}[enabled] {
			t.Fatalf("%s: benchmarks %v, %d Kueue charts", stack, enabled, len(charts))
		}
		// What each enabled stack must have, counted from its pools: one flavor for the system
		// nodes (MPI launchers run there), and per pool with a queue (not an UltraServer's) a
		// flavor, a ClusterQueue, a LocalQueue and its network Topology, one per distinct name.
		want := map[string]int{}
		if enabled {
			want["ResourceFlavor"] = 1
			topologies := map[string]bool{}
			for _, p := range ev.spec.Pools {
				if p.Benchmark == nil || p.Benchmark.Queue == nil {
					continue
				}
				want["ResourceFlavor"]++
				want["ClusterQueue"]++
				want["LocalQueue"]++
				if t := p.Benchmark.Queue.Topology; t != nil && !topologies[t.Name] {
					topologies[t.Name] = true
					want["Topology"]++
				}
			}
		}
		got := map[string]int{}
		for _, kind := range []string{"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"} {
			for _, r := range ev.ofType("kubernetes:" + topology.KueueAPIVersion + ":" + kind) {
				got[kind]++
				if !dependsOn(r, charts[0]) || r.Options.DeletedWith == "" {
					t.Errorf("%s: %s %s must follow the chart (its CRDs and webhooks) and go with the cluster", stack, kind, r.Name)
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: queue objects %v, want %v", stack, got, want)
		}
	}
	if twoReplicas == 0 {
		t.Error("no stack has two system nodes: two Kueue replicas are never planned")
	}
}

// checkKueueManagerConfig: gpucluster's Kueue configuration is the release's (its chart's
// values.yaml, read from the module cache) but for the integrations and the namespace selector,
// which selects the jobs' namespace and nothing else (written out here: the chart gives every
// job and pod webhook this selector, and each of those refuses what it covers while Kueue does
// not serve).
func checkKueueManagerConfig(t *testing.T, release string) {
	t.Helper()
	var ours, theirs map[string]any
	if err := yaml.Unmarshal([]byte(kueue.ManagerConfig()), &ours); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(release), &theirs); err != nil {
		t.Fatal(err)
	}
	wantSelector := map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "default"}}
	if !reflect.DeepEqual(ours["managedJobsNamespaceSelector"], wantSelector) || topology.BenchmarkNamespace != "default" {
		t.Errorf("managedJobsNamespaceSelector %v, want %v", ours["managedJobsNamespaceSelector"], wantSelector)
	}
	// Its integrations are gpucluster's two job kinds alone (Frameworks' comment says why).
	wantIntegrations := map[string]any{"frameworks": []any{"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"}}
	if !reflect.DeepEqual(ours["integrations"], wantIntegrations) {
		t.Errorf("integrations %v, want %v", ours["integrations"], wantIntegrations)
	}
	// Its resources section maps the ComputeDomain channel's DeviceClass, which the release's has
	// none of (the test cluster's Kueue, started with it, admits an UltraServer pool's job).
	wantResources := map[string]any{"deviceClassMappings": []any{map[string]any{
		"name": "nvidia.com/imex-channel", "deviceClassNames": []any{"compute-domain-default-channel.nvidia.com"}}}}
	if !reflect.DeepEqual(ours["resources"], wantResources) || theirs["resources"] != nil {
		t.Errorf("resources %v (the release's %v), want %v", ours["resources"], theirs["resources"], wantResources)
	}
	delete(ours, "managedJobsNamespaceSelector")
	delete(ours, "integrations")
	delete(theirs, "integrations")
	delete(ours, "resources")
	if !reflect.DeepEqual(ours, theirs) {
		t.Errorf("Kueue's configuration differs from the release's beyond its integrations, namespace selector and resources:\n ours   %v\n theirs %v", ours, theirs)
	}
}

// TestKueueQuotaOfTheP5Stack: the p5-efa stack's ClusterQueue, its quota written out by hand. Its
// two p5.48xlarge nodes offer 16 GPUs (8 H100 each) and 64 EFA devices (32 each, one per network
// card: EC2 user guide, "Network cards"); its MPI launcher runs on the system nodes and asks for 500m CPU and 1Gi of memory
// (components/benchjobs), which the system flavor must admit, with none of the GPUs or EFA.
func TestKueueQuotaOfTheP5Stack(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml")
	queues := ev.ofType("kubernetes:" + topology.KueueAPIVersion + ":ClusterQueue")
	if len(queues) != 1 {
		t.Fatalf("%d ClusterQueues, want 1", len(queues))
	}
	spec, _ := queues[0].Input("spec").(map[string]any)
	groups, _ := spec["resourceGroups"].([]any)
	if len(groups) != 1 {
		t.Fatalf("resource groups %v", spec["resourceGroups"])
	}
	flavors := map[string]map[string]string{}
	for _, f := range groups[0].(map[string]any)["flavors"].([]any) {
		f := f.(map[string]any)
		q := map[string]string{}
		for _, r := range f["resources"].([]any) {
			r := r.(map[string]any)
			q[r["name"].(string)] = fmt.Sprint(r["nominalQuota"])
		}
		flavors[f["name"].(string)] = q
	}
	// Two p5.48xlarge (EC2 user guide: 192 vCPUs, 2,048 GiB, 8 GPUs, 32 EFA devices each), less
	// what the kubelet keeps (components/topology allocatable.go, after EKS's nodeadm), worked by
	// hand: CPU 192,000m less 60 + 10 + 2 x 5 + 188 x 2.5 = 550m, so 191,450m a node; memory
	// 2,048 x 1,024 x 0.95 = 1,992,294.4 MiB less 255 + 11 x 250 pods + 100 eviction = 3,105 MiB,
	// so 1,989,189.4 MiB a node, 3,978,378 MiB for two (whole MiB).
	wantPool := map[string]string{"cpu": "382900m", "memory": "3978378Mi", "nvidia.com/gpu": "16", "vpc.amazonaws.com/efa": "64"}
	if q := flavors["gpu"]; !reflect.DeepEqual(q, wantPool) {
		t.Errorf("the pool's flavor quota %v; want %v", q, wantPool)
	}
	wantSystem := map[string]string{"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "0", "vpc.amazonaws.com/efa": "0"}
	if q := flavors["system"]; !reflect.DeepEqual(q, wantSystem) {
		t.Errorf("the system flavor's quota %v; want %v (one MPI launcher, no GPU or EFA)", q, wantSystem)
	}
	// A job that does not fit must not hold up a later one that does (StrictFIFO would), and
	// the one LocalQueue, in the jobs' namespace, may use the queue.
	if spec["queueingStrategy"] != "BestEffortFIFO" || !reflect.DeepEqual(spec["namespaceSelector"], map[string]any{}) {
		t.Errorf("ClusterQueue strategy %v, namespace selector %v; want BestEffortFIFO and every namespace", spec["queueingStrategy"], spec["namespaceSelector"])
	}
	// The pool's flavor admits a job to nodes that carry the pool's label and its GPU taint
	// (components/topology: every GPU node is tainted nvidia.com/gpu=true:NoSchedule), so that
	// Kueue counts only the pods that tolerate it.
	wantFlavor := map[string]any{
		"nodeLabels": map[string]any{"gpucluster.io/pool": "gpu"},
		"nodeTaints": []any{map[string]any{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}},
	}
	for _, f := range ev.ofType("kubernetes:" + topology.KueueAPIVersion + ":ResourceFlavor") {
		if f.Input("metadata").(map[string]any)["name"] != "gpu" {
			continue
		}
		got := map[string]any{}
		for k, v := range f.Input("spec").(map[string]any) {
			if k != "topologyName" { // the network Topology's, checked in TestKueue
				got[k] = v
			}
		}
		if !reflect.DeepEqual(got, wantFlavor) {
			t.Errorf("the pool's ResourceFlavor %v, want %v", got, wantFlavor)
		}
	}
}
