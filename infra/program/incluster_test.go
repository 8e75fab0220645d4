package program

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

var (
	kubeOnce   sync.Once
	kubeServer *kubeapi.Server
)

// apiServer is one real kube-apiserver shared by this package's tests (started on first use).
func apiServer(t *testing.T) *kubeapi.Server {
	t.Helper()
	kubeOnce.Do(func() {
		if kubeapi.Skipped() != "" {
			return
		}
		s, err := kubeapi.Start()
		if err != nil {
			t.Fatalf("the test kube-apiserver could not start: %v", err)
		}
		kubeServer = s
	})
	if kubeServer == nil {
		t.Skip(kubeapi.Skipped())
	}
	return kubeServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kubeServer != nil {
		kubeServer.Stop()
	}
	os.Exit(code)
}

// kubeObjects are the Kubernetes objects a stack emits, as the API server receives them, the
// benchmark jobs (applied by hand) included. Helm charts and yaml/v2 ConfigFiles are remote
// components: their objects are rendered at deploy time, and only their inputs are checked
// (TestKarpenterController, TestMPIOperator; the MPIJob CRD the ConfigFile applies is the one
// the test server serves).
func kubeObjects(ev *evaluation) []map[string]any {
	var objs []map[string]any
	for _, r := range ev.res {
		if !strings.HasPrefix(r.Type, "kubernetes:") || r.Type == "kubernetes:helm.sh/v4:Chart" || r.Type == "kubernetes:yaml/v2:ConfigFile" {
			continue
		}
		objs = append(objs, r.Inputs.Mappable())
	}
	for _, name := range slices.Sorted(maps.Keys(ev.d.BenchmarkJobs)) {
		for _, item := range ev.d.BenchmarkJobs[name]["items"].([]any) {
			objs = append(objs, item.(map[string]any))
		}
	}
	for _, name := range sortedPools(ev) {
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "PodTemplate",
			"metadata": map[string]any{"name": name + "-training", "namespace": "default"}, "template": ev.d.PodTemplates[name]})
	}
	return objs
}

// replace writes obj over the object of its name, or creates it again if that one has just
// finished going (a controller's finalizer held it).
func replace(s *kubeapi.Server, obj map[string]any) error {
	// An object another test's controller is finishing deleting (a Kueue flavor its finalizer
	// held) may go between any two calls: 409 on create, gone on update. Retry until one sticks.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := replaceOnce(s, obj)
		var rejected *kubeapi.RejectedError
		if err == nil || !errors.As(err, &rejected) || (rejected.Code != 404 && rejected.Code != 409) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func replaceOnce(s *kubeapi.Server, obj map[string]any) error {
	current, err := s.Get(obj)
	if err != nil {
		return s.Create(obj)
	}
	obj = maps.Clone(obj)
	md := maps.Clone(obj["metadata"].(map[string]any))
	md["resourceVersion"] = current["metadata"].(map[string]any)["resourceVersion"]
	obj["metadata"] = md
	return s.Update(obj)
}

func sortedPools(ev *evaluation) []string {
	var names []string
	for name := range ev.d.PodTemplates {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestEveryKubernetesObjectIsAcceptedByARealAPIServer creates every object of every stack in a
// kube-apiserver (kubeapi.KubernetesVersion) with the Karpenter v1.15.2 CRDs, with strict field validation.
func TestEveryKubernetesObjectIsAcceptedByARealAPIServer(t *testing.T) {
	s := apiServer(t)
	kinds := map[string]int{}
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		objs := kubeObjects(ev)
		// Namespaces first, as pulumi-kubernetes orders them; they stay, as the test server
		// has no namespace controller to finish deleting one.
		slices.SortStableFunc(objs, func(a, b map[string]any) int { return boolOrder(a["kind"] == "Namespace", b["kind"] == "Namespace") })
		for _, obj := range objs {
			err := s.Create(obj)
			var rejected *kubeapi.RejectedError
			if obj["kind"] == "Namespace" && errors.As(err, &rejected) && rejected.Code == 409 {
				err = nil // created for an earlier stack
			} else if errors.As(err, &rejected) && rejected.Code == 409 {
				// Cluster-wide objects another test left (the runtimes a running Trainer
				// holds with a finalizer): replaced, with the same strict validation.
				err = replace(s, obj)
			}
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(file), err)
				continue
			}
			kinds[fmt.Sprint(obj["kind"])]++
		}
		for _, obj := range objs { // the next stack reuses the same names
			if obj["kind"] != "Namespace" {
				s.Delete(obj)
			}
		}
	}
	t.Logf("created %v", kinds)
	for _, want := range []string{"DaemonSet", "EC2NodeClass", "NodePool", "PodTemplate", "MPIJob", "Deployment", "ClusterRole"} {
		if kinds[want] == 0 {
			t.Errorf("no %s was created: the stacks must exercise every kind", want)
		}
	}
}

// TestBrokenEC2NodeClassIsRejected: the server enforces the CRD's CEL rules, so a node class
// without its primary interface (the derived layout always has one) is refused.
func TestBrokenEC2NodeClassIsRejected(t *testing.T) {
	s := apiServer(t)
	ev := evaluate(t, "../../stacks/Pulumi.karpenter-p5.yaml")
	var nodeClass map[string]any
	for _, r := range ev.ofType("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass") {
		nodeClass = r.Inputs.Mappable()
	}
	if nodeClass == nil {
		t.Fatal("the karpenter-p5 stack has no EC2NodeClass")
	}
	nodeClass["metadata"] = map[string]any{"name": "broken"}
	spec := nodeClass["spec"].(map[string]any)
	nics := spec["networkInterfaces"].([]any)
	spec["networkInterfaces"] = nics[1:] // drop card 0 device 0, the primary ENA interface
	var rejected *kubeapi.RejectedError
	err := s.Create(nodeClass)
	if !errors.As(err, &rejected) || !strings.Contains(rejected.Message, "must include a primary interface") {
		t.Fatalf("an EC2NodeClass without a primary interface must be rejected by the CRD's CEL rule; got %v", err)
	}
}

func TestInClusterPiecesFollowTheSpec(t *testing.T) {
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		daemonSets := map[string]map[string]any{}
		for _, r := range ev.ofType("kubernetes:apps/v1:DaemonSet") {
			daemonSets[str(r.Input("metadata").(map[string]any)["name"])] = r.Inputs.Mappable()
		}
		want := map[string][]string{}
		for _, p := range ev.spec.Pools {
			if p.InCluster.NVIDIADevicePlugin.Deploy {
				want["nvidia-device-plugin"] = append(want["nvidia-device-plugin"], p.Name)
			}
			if p.InCluster.EFADevicePlugin.Deploy {
				want["aws-efa-k8s-device-plugin"] = append(want["aws-efa-k8s-device-plugin"], p.Name)
			}
			if p.InCluster.FabricManager.Deploy {
				want["nvidia-fabricmanager"] = append(want["nvidia-fabricmanager"], p.Name)
			}
			if len(p.HealthGate.Checks) > 0 {
				want[healthgate.DaemonSetName(p.Name)] = []string{p.Name}
			}
			if p.ReadsEFACounters() {
				want[topology.EFACountersReader] = append(want[topology.EFACountersReader], p.Name)
			}
			if p.InCluster.DCGMExporter.Deploy {
				want[topology.DCGMExporterName] = append(want[topology.DCGMExporterName], p.Name)
			}
		}
		for name, pools := range want {
			ds, ok := daemonSets[name]
			if !ok {
				t.Errorf("%s: no %s DaemonSet for pools %v", filepath.Base(file), name, pools)
				continue
			}
			pod := ds["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			terms := pod["affinity"].(map[string]any)["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"].([]any)
			values := terms[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)["values"]
			sort.Strings(pools)
			if str(values) != str(toAny(pools)) {
				t.Errorf("%s: %s lands on pools %v, want %v", filepath.Base(file), name, values, pools)
			}
			// Every taint of those pools is tolerated (the GPU taint above all).
			if !tolerates(pod["tolerations"], topology.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: "NoSchedule"}) {
				t.Errorf("%s: %s does not tolerate the GPU taint", filepath.Base(file), name)
			}
			// Only the EFA plugin (as its upstream chart) and the EFA counters reader (the counters
			// exist only in the host's namespace) share the node's network: the gate asks the
			// driver, not fabric manager's port on the host's loopback.
			if (pod["hostNetwork"] == true) != (name == "aws-efa-k8s-device-plugin" || name == topology.EFACountersReader) {
				t.Errorf("%s: %s hostNetwork %v", filepath.Base(file), name, pod["hostNetwork"])
			}
			if name == "aws-efa-k8s-device-plugin" {
				checkEFAPluginIsUpstreams(t, filepath.Base(file), ev.spec.Region, pod)
			}
			if name == topology.EFACountersReader { // the host's /sys read-only, no capability
				csc, _ := pod["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)
				if vols := str(pod["containers"].([]any)[0].(map[string]any)["volumeMounts"]); !strings.Contains(vols, "mountPath:"+topology.EFACountersHostSys+" name:host-sys readOnly:true") ||
					csc["readOnlyRootFilesystem"] != true || csc["allowPrivilegeEscalation"] != false || str(csc["capabilities"]) != str(map[string]any{"drop": []any{"ALL"}}) {
					t.Errorf("%s: %s mounts %s, security %v", filepath.Base(file), name, vols, csc)
				}
			}
			if name == topology.DCGMExporterName { // NVIDIA's chart's privilege, no more; on a node held for a health check too
				checkDCGMExporter(t, filepath.Base(file), pod)
			}
			if name == "nvidia-device-plugin" { // hardened as far as it works
				sc, _ := pod["securityContext"].(map[string]any)
				seccomp, _ := sc["seccompProfile"].(map[string]any)
				csc, _ := pod["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)
				if seccomp["type"] != "RuntimeDefault" || csc["readOnlyRootFilesystem"] != true || csc["allowPrivilegeEscalation"] != false ||
					str(csc["capabilities"]) != str(map[string]any{"drop": []any{"ALL"}}) {
					t.Errorf("%s: %s security: pod %v, container %v", filepath.Base(file), name, sc, csc)
				}
				// As NVIDIA's v0.20.0 manifest: the kubelet's directory must exist, never made.
				if vols := str(pod["volumes"]); !strings.Contains(vols, "path:/var/lib/kubelet/device-plugins type:Directory") {
					t.Errorf("%s: %s volumes %s", filepath.Base(file), name, vols)
				}
			}
		}
		for name := range daemonSets {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: DaemonSet %s deployed though no pool needs it", filepath.Base(file), name)
			}
		}
	}
}

// checkEFAPluginIsUpstreams: the EFA device plugin's pod is what aws/eks-charts
// stable/aws-efa-k8s-device-plugin v0.5.32 renders with its default values (templates/
// daemonset.yaml): its image tag in the region's EKS registry, the host network, /dev/infiniband
// and /opt/aws/neuron mounted, privileged as root, requests without limits.
func checkEFAPluginIsUpstreams(t *testing.T, file, region string, pod map[string]any) {
	t.Helper()
	c := pod["containers"].([]any)[0].(map[string]any)
	if c["image"] != topology.EKSImageRegistry(region)+"/eks/aws-efa-k8s-device-plugin:v0.5.21-eksbuild.13" {
		t.Errorf("%s: EFA plugin image %v", file, c["image"])
	}
	sc := c["securityContext"].(map[string]any)
	if sc["privileged"] != true || sc["runAsUser"] != 0.0 || sc["allowPrivilegeEscalation"] != true {
		t.Errorf("%s: EFA plugin security context %v, the chart runs it privileged as root", file, sc)
	}
	mounts := map[string]bool{}
	for _, m := range c["volumeMounts"].([]any) {
		mounts[str(m.(map[string]any)["mountPath"])] = true
	}
	for _, want := range []string{"/var/lib/kubelet/device-plugins", "/dev/infiniband/", "/opt/aws/neuron/"} {
		if !mounts[want] {
			t.Errorf("%s: EFA plugin does not mount %s: %v", file, want, mounts)
		}
	}
	if res := c["resources"].(map[string]any); res["limits"] != nil || str(res["requests"]) != str(map[string]any{"cpu": "10m", "memory": "20Mi"}) {
		t.Errorf("%s: EFA plugin resources %v", file, res)
	}
	if pod["automountServiceAccountToken"] != false {
		t.Errorf("%s: EFA plugin mounts a service account token it never uses", file)
	}
}

// TestEFAPluginImageComesFromTheRegionsRegistry: a stack in a region whose EKS registry is not
// 602401143452 pulls the plugin from its own (EKS UG add-ons-images.html).
func TestEFAPluginImageComesFromTheRegionsRegistry(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.cpt.yaml")
	stack := "config:\n  aws:region: af-south-1\n  gpucluster:pools:\n    - {name: gpu, profile: p5-efa, nodes: 2}\n"
	if err := os.WriteFile(file, []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := evaluate(t, file)
	found := 0
	for _, r := range ev.ofType("kubernetes:apps/v1:DaemonSet") {
		if spec := str(r.Inputs.Mappable()["spec"]); strings.Contains(spec, "aws-efa-k8s-device-plugin:") {
			found++
			if !strings.Contains(spec, "877085696533.dkr.ecr.af-south-1.amazonaws.com/eks/aws-efa-k8s-device-plugin:") {
				t.Errorf("af-south-1 pulls the EFA plugin from another registry: %s", spec)
			}
		}
	}
	if found != 1 {
		t.Errorf("%d EFA plugin DaemonSets, want 1", found)
	}
}

func TestFabricManagerDaemonSet(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.p4d-custom-ami.yaml")
	var found []offline.Resource
	for _, r := range ev.ofType("kubernetes:apps/v1:DaemonSet") {
		if r.Input("metadata").(map[string]any)["name"] == "nvidia-fabricmanager" {
			found = append(found, r)
		}
	}
	ds := one(t, found, "fabric manager DaemonSets")
	pod := ds.Input("spec").(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	script := str(c["command"])
	if pod["hostPID"] != true || c["securityContext"].(map[string]any)["privileged"] != true || c["readinessProbe"] == nil ||
		c["resources"].(map[string]any)["requests"] == nil {
		t.Errorf("fabric manager DaemonSet %v", pod)
	}
	// The stack's image, as pinned in stacks/Pulumi.p4d-custom-ami.yaml; nothing installed at start.
	if c["image"] != "111122223333.dkr.ecr.us-west-2.amazonaws.com/nvidia-fabricmanager:580.159.03@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" ||
		strings.Contains(script, "apt") || strings.Contains(script, "curl") || strings.Contains(script, "wget") {
		t.Errorf("fabric manager runs image %v with %s", c["image"], script)
	}
	if e := str(c["env"]); !strings.Contains(e, "name:NVIDIA_DRIVER_VERSION value:580.159.03") || !strings.Contains(e, "name:FM_STATUS value:/run/gpucluster/fabricmanager/status") {
		t.Errorf("fabric manager's environment %s", e)
	}
	mounts := str(c["volumeMounts"])
	if !strings.Contains(mounts, "/dev") || !strings.Contains(mounts, "/run/nvidia") || !strings.Contains(mounts, "/run/gpucluster/fabricmanager") {
		t.Errorf("mounts %s", mounts)
	}
	// The pool's gate reads the status file, read-only.
	gates := 0
	for _, r := range ev.ofType("kubernetes:apps/v1:DaemonSet") {
		if r.Input("metadata").(map[string]any)["name"] != "gpucluster-health-gate-gpu" {
			continue
		}
		gates++
		gate := r.Input("spec").(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		checks := gate["initContainers"].([]any)[0].(map[string]any)
		if m := str(checks["volumeMounts"]); !strings.Contains(m, "mountPath:/run/gpucluster/fabricmanager name:fabricmanager-status readOnly:true") ||
			!strings.Contains(str(checks["env"]), "name:FM_STATUS value:/run/gpucluster/fabricmanager/status") {
			t.Errorf("the gate's GPU checks: mounts %s, env %s", m, str(checks["env"]))
		}
	}
	if gates != 1 {
		t.Errorf("%d health gates of pool gpu", gates)
	}
	// OnDelete, so pulumi-kubernetes must not await a rollout only a pod deletion starts.
	md := ds.Input("metadata").(map[string]any)
	if ds.Input("spec").(map[string]any)["updateStrategy"].(map[string]any)["type"] != "OnDelete" ||
		md["annotations"].(map[string]any)["pulumi.com/skipAwait"] != "true" { // pulumi-kubernetes' annotation, written out
		t.Errorf("fabric manager DaemonSet: update strategy %v, annotations %v", ds.Input("spec").(map[string]any)["updateStrategy"], md["annotations"])
	}
	// It lifts no taint: the pool's health gate does once CUDA works, which needs fabric manager.
	if pod["serviceAccountName"] != nil || strings.Contains(script, "curl") {
		t.Errorf("fabric manager calls the API server: %v", pod)
	}
	if pod["automountServiceAccountToken"] != false {
		t.Errorf("fabric manager mounts a service account token it never uses (automountServiceAccountToken %v)", pod["automountServiceAccountToken"])
	}
	// Images that run fabric manager on the host get no DaemonSet.
	for _, stack := range []string{"p5-efa", "p4d-efa"} {
		for _, r := range evaluate(t, "../../stacks/Pulumi."+stack+".yaml").ofType("kubernetes:apps/v1:DaemonSet") {
			if r.Input("metadata").(map[string]any)["name"] == "nvidia-fabricmanager" {
				t.Errorf("%s runs fabric manager on the host, yet a DaemonSet is deployed", stack)
			}
		}
	}
}

// TestHealthGateDaemonSets: every GPU pool of every stack gets its gate, with the pool's checks
// in its environment; no training pod tolerates the health taint; the gate reaches into its host
// no further than its checks need: no host network or PIDs, no host path, nothing installed, the
// GPU checks and the decision unprivileged as nobody, and only the EFA check privileged, on EFA
// pools alone. `pulumi up` does not wait on a node's health.
func TestHealthGateDaemonSets(t *testing.T) {
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		stack := filepath.Base(file)
		gates := map[string]map[string]any{}
		for _, r := range ev.ofType("kubernetes:apps/v1:DaemonSet") {
			md := r.Input("metadata").(map[string]any)
			if strings.HasPrefix(str(md["name"]), healthgate.GateName) {
				gates[str(md["name"])] = r.Inputs.Mappable()
				// Checked once per node: a rolling update would re-run the CUDA sample on GPUs
				// that running jobs hold, and label a healthy busy node failed.
				if u := r.Input("spec").(map[string]any)["updateStrategy"]; str(u) != str(map[string]any{"type": "OnDelete"}) {
					t.Errorf("%s: %s: update strategy %v: a changed gate would re-check nodes under running jobs (want OnDelete)", stack, md["name"], u)
				}
				if md["annotations"].(map[string]any)["pulumi.com/skipAwait"] != "true" {
					t.Errorf("%s: %s: pulumi up waits on the nodes' health", stack, md["name"])
				}
			}
		}
		if len(gates) != len(ev.spec.Pools) {
			t.Errorf("%s: %d health gates for %d pools", stack, len(gates), len(ev.spec.Pools))
		}
		for _, p := range ev.spec.Pools {
			if tmpl, ok := ev.d.PodTemplates[p.Name]; ok && tolerates(tmpl["spec"].(map[string]any)["tolerations"], topology.HealthTaint) {
				t.Errorf("%s: pool %s: the training pod tolerates %s and may start before the node is checked", stack, p.Name, topology.HealthTaint.Key)
			}
			ds, ok := gates[healthgate.DaemonSetName(p.Name)]
			if !ok {
				t.Errorf("%s: pool %s has no health gate", stack, p.Name)
				continue
			}
			pod := ds["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			// One host path at most: the fabric-manager DaemonSet's status directory, where that
			// DaemonSet runs, which only the GPU checks mount, read-only.
			hostPaths := []any{}
			for _, v := range pod["volumes"].([]any) {
				if hp, ok := v.(map[string]any)["hostPath"]; ok {
					hostPaths = append(hostPaths, hp)
				}
			}
			wantHostPaths := []any{}
			if p.InCluster.FabricManager.Deploy {
				wantHostPaths = append(wantHostPaths, map[string]any{"path": "/run/gpucluster/fabricmanager", "type": "DirectoryOrCreate"})
			}
			if str(hostPaths) != str(wantHostPaths) || strings.Count(str(pod), "fabricmanager-status readOnly:true") != len(wantHostPaths) {
				t.Errorf("%s: pool %s: the gate's host paths %v, want %v, mounted read-only by the GPU checks", stack, p.Name, hostPaths, wantHostPaths)
			}
			if pod["hostNetwork"] == true || pod["hostPID"] == true ||
				!tolerates(pod["tolerations"], topology.HealthTaint) || pod["serviceAccountName"] != healthgate.ServiceAccount {
				t.Errorf("%s: pool %s: the gate's pod %v", stack, p.Name, pod)
			}
			var names []string
			for _, c := range append(pod["initContainers"].([]any), pod["containers"].([]any)...) {
				c := c.(map[string]any)
				names = append(names, str(c["name"]))
				sc := c["securityContext"].(map[string]any)
				if strings.Contains(str(c["command"]), "apt-get") || strings.Contains(str(c["command"]), "yum") {
					t.Errorf("%s: pool %s: %s installs packages", stack, p.Name, c["name"])
				}
				if c["name"] == "efa-check" {
					if sc["privileged"] != true || c["image"] != healthgate.EFACheckImage || !strings.Contains(str(c["env"]), fmt.Sprintf("name:EFA_DEVICES value:%d", p.HealthGate.EFADevices)) {
						t.Errorf("%s: pool %s: the EFA check %v", stack, p.Name, c)
					}
					continue
				}
				if sc["runAsNonRoot"] != true || sc["allowPrivilegeEscalation"] != false || sc["privileged"] == true ||
					str(sc["capabilities"]) != str(map[string]any{"drop": []any{"ALL"}}) || !strings.Contains(str(c["env"]), "name:CHECKS value:"+strings.Join(p.HealthGate.Checks, " ")) {
					t.Errorf("%s: pool %s: gate container %v: %v", stack, p.Name, c["name"], c)
				}
			}
			want := []string{"gpu-checks", "gate"}
			if p.HealthGate.EFADevices > 0 {
				want = []string{"gpu-checks", "efa-check", "gate"}
			}
			if !slices.Equal(names, want) {
				t.Errorf("%s: pool %s: containers %v, want %v", stack, p.Name, names, want)
			}
		}
	}
}

func TestKarpenterController(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.karpenter-p5.yaml")
	var charts []offline.Resource
	for _, c := range ev.ofType("kubernetes:helm.sh/v4:Chart") {
		if c.Input("chart") == karpenter.ChartRef {
			charts = append(charts, c)
		}
	}
	chart := one(t, charts, "Karpenter charts")
	values := chart.Input("values").(map[string]any)
	if chart.Input("chart") != karpenter.ChartRef || chart.Input("version") != karpenter.ChartVersion ||
		values["settings"].(map[string]any)["interruptionQueue"] != "karpenter-p5-karpenter" ||
		values["nodeSelector"].(map[string]any)["gpucluster.io/pool"] != "system" {
		t.Errorf("chart %v", chart.Inputs)
	}
	// The stack has one system node: one controller (the chart's second would never be placed;
	// TestRealEngineStacks/karpenter-p5 runs the real chart through the await on that one node).
	if n := ev.spec.Cluster.SystemNodes.Count; n != 1 || values["replicas"] != float64(1) {
		t.Errorf("%d system nodes, %v Karpenter replicas; the stack should prove one node and one replica", n, values["replicas"])
	}
	if n := len(ev.ofType("aws:cloudwatch/eventRule:EventRule")); n != 4 {
		t.Errorf("%d interruption rules, want 4", n)
	}
	entry := one(t, ev.ofType("aws:eks/accessEntry:AccessEntry"), "access entries")
	if entry.Input("type") != "EC2_LINUX" {
		t.Errorf("Karpenter node access entry %v", entry.Inputs)
	}
	var controllerPolicies []offline.Resource
	for _, p := range ev.ofType("aws:iam/rolePolicy:RolePolicy") {
		if p.Input("role") == "karpenter-p5-karpenter" {
			controllerPolicies = append(controllerPolicies, p)
		}
	}
	policy := str(one(t, controllerPolicies, "controller policies").Input("policy"))
	for _, want := range []string{`"aws:ResourceTag/kubernetes.io/cluster/karpenter-p5":"owned"`, "placement-group/*", "ec2:DescribePlacementGroups",
		`"aws:RequestedRegion":"us-west-2"`, "arn:aws:sqs"} {
		if !strings.Contains(policy, want) {
			t.Errorf("controller policy lacks %s", want)
		}
	}
	// NodePools are deleted before the controller: they depend on the chart.
	chartURN := chart.URN
	for _, typ := range []string{"kubernetes:karpenter.sh/v1:NodePool", "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"} {
		r := one(t, ev.ofType(typ), typ)
		found := false
		for _, d := range r.Dependencies {
			found = found || d == chartURN
		}
		if !found {
			t.Errorf("%s does not depend on the controller chart: destroy could delete the controller first", typ)
		}
	}
	for _, typ := range []string{"kubernetes:karpenter.sh/v1:NodePool", "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"} {
		// 45 minutes, written out: topology.KarpenterPoolDeleteTimeout says why.
		if to := one(t, ev.ofType(typ), typ).Options.CustomTimeouts; to == nil || to.Delete != "45m" {
			t.Errorf("%s delete timeout %+v, want 45m: Karpenter drains and terminates GPU nodes before it goes", typ, to)
		}
	}
	nodeClass := one(t, ev.ofType("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"), "node classes").Input("spec").(map[string]any)
	if nodeClass["placementGroupSelector"].(map[string]any)["name"] != "karpenter-p5-gpu" || len(nodeClass["networkInterfaces"].([]any)) != 33 {
		t.Errorf("node class %v", nodeClass)
	}
	nodePool := one(t, ev.ofType("kubernetes:karpenter.sh/v1:NodePool"), "node pools").Input("spec").(map[string]any)
	if nodePool["limits"].(map[string]any)["nvidia.com/gpu"] != "32" || nodePool["disruption"].(map[string]any)["consolidationPolicy"] != "WhenEmpty" {
		t.Errorf("node pool %v", nodePool)
	}
}

func tolerates(raw any, taint topology.Taint) bool {
	list, _ := raw.([]any)
	for _, t := range list {
		m := t.(map[string]any)
		tol := topology.Toleration{Key: strOr(m["key"]), Operator: strOr(m["operator"]), Value: strOr(m["value"]), Effect: strOr(m["effect"])}
		if tol.Tolerates(taint) {
			return true
		}
	}
	return false
}

func strOr(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// boolOrder sorts true before false.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// TestProviderKubeconfigCarriesTheAWSProfile: with aws:profile set, `aws eks get-token` in the
// Kubernetes provider's kubeconfig runs under that profile, as the AWS provider does; without
// it, the kubeconfig is pulumi-eks's unchanged.
func TestProviderKubeconfigCarriesTheAWSProfile(t *testing.T) {
	spec, err := topology.LoadStack("../../stacks/Pulumi.dev.yaml", testDay)
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"ml-platform", ""} {
		engine := offline.NewEngine(spec.Stack)
		if profile != "" {
			engine = engine.WithConfig(map[string]string{"aws:profile": profile})
		}
		if err := engine.Run(func(ctx *pulumi.Context) error { _, err := Build(ctx, spec); return err }); err != nil {
			t.Fatal(err)
		}
		var kubeconfig string
		for _, r := range engine.Resources() {
			if r.Type == "pulumi:providers:kubernetes" {
				kubeconfig, _ = r.Input("kubeconfig").(string)
			}
		}
		has := strings.Contains(kubeconfig, `{"name":"AWS_PROFILE","value":"ml-platform"}`)
		if kubeconfig == "" || has != (profile != "") || strings.Contains(kubeconfig, `"AWS_PROFILE"`) != (profile != "") {
			t.Errorf("aws:profile %q: provider kubeconfig %s", profile, kubeconfig)
		}
	}
}

// checkDCGMExporter: the exporter runs as NVIDIA's chart runs it (root with SYS_ADMIN added, for
// the profiling fields, no privilege escalation, the pod-resources socket read-only, no token,
// no GPU requested) and tolerates the taint `gpucluster health` holds a node with.
func checkDCGMExporter(t *testing.T, file string, pod map[string]any) {
	t.Helper()
	c := pod["containers"].([]any)[0].(map[string]any)
	csc, _ := c["securityContext"].(map[string]any)
	if csc["allowPrivilegeEscalation"] != false || csc["privileged"] != nil || str(csc["capabilities"]) != str(map[string]any{"add": []any{"SYS_ADMIN"}, "drop": []any{"ALL"}}) {
		t.Errorf("%s: exporter security %v", file, csc)
	}
	if vols := str(c["volumeMounts"]); !strings.Contains(vols, "mountPath:/var/lib/kubelet/pod-resources name:pod-gpu-resources readOnly:true") {
		t.Errorf("%s: exporter mounts %s", file, vols)
	}
	if pod["automountServiceAccountToken"] != false || c["resources"].(map[string]any)["limits"].(map[string]any)[topology.ResourceGPU] != nil {
		t.Errorf("%s: exporter token %v, resources %v", file, pod["automountServiceAccountToken"], c["resources"])
	}
	if !tolerates(pod["tolerations"], topology.HealthTaint) {
		t.Errorf("%s: exporter does not tolerate %v", file, topology.HealthTaint)
	}
	if c["image"] != topology.DCGMExporterImage || str(c["args"]) != str([]any{"-f", topology.DCGMExporterCounters, "-c", "30000"}) {
		t.Errorf("%s: exporter %v %v", file, c["image"], c["args"])
	}
}
