package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
)

func stack(name string) string { return "../../stacks/Pulumi." + name + ".yaml" }

func writeBundle(t *testing.T, name string) (string, *Result) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	r, err := Write(stack(name), dir, testDay, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func planOf(t *testing.T, dir string) planJSON {
	var p planJSON
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "plan.json"))), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func TestP5Bundle(t *testing.T) {
	dir, r := writeBundle(t, "p5-efa")
	p := planOf(t, dir)
	if p.Stack != "p5-efa" || len(p.Resources) != len(r.Resources) || len(p.Resources) < 40 {
		t.Fatalf("plan.json: stack %s, %d resources", p.Stack, len(p.Resources))
	}
	var lt, ng *planResource
	for i, res := range p.Resources {
		switch {
		case res.Type == "aws:ec2/launchTemplate:LaunchTemplate" && res.Name == "p5-efa-gpu":
			lt = &p.Resources[i]
		case res.Type == "aws:eks/nodeGroup:NodeGroup" && res.Name == "p5-efa-gpu":
			ng = &p.Resources[i]
		}
		if i > 0 && p.Resources[i-1].URN >= res.URN {
			t.Fatalf("resources are not in URN order at %s", res.URN)
		}
	}
	if lt == nil || ng == nil {
		t.Fatal("no launch template or node group for pool gpu")
	}
	nics := lt.Inputs["networkInterfaces"].([]any)
	if len(nics) != 33 || nics[1].(map[string]any)["interfaceType"] != "efa-only" {
		t.Errorf("launch template interfaces %v", nics)
	}
	// Cloud-computed values are marked unknown, never invented.
	sg := nics[0].(map[string]any)["securityGroups"].([]any)
	if sg[0] != offline.Unknown || ng.Inputs["subnetIds"].([]any)[0] != offline.Unknown || ng.Inputs["clusterName"] != "p5-efa" {
		t.Errorf("unknowns: security group %v, subnets %v, cluster %v", sg, ng.Inputs["subnetIds"], ng.Inputs["clusterName"])
	}
	if bytes.Contains([]byte(read(t, filepath.Join(dir, "plan.json"))), []byte("mock")) {
		t.Error("plan.json contains a made-up mock value")
	}
	review := read(t, filepath.Join(dir, "REVIEW.md"))
	mustContain(t, "REVIEW.md", review, "## Pool `gpu`", "p5.48xlarge: 8 × NVIDIA H100 80 GB", "NVSwitch, NVLink4, 900 GB/s per GPU",
		"32 interfaces on 32 network cards, GPUDirect RDMA", "cluster: EFA pool", "`p2p`", "`net-libfabric-gdrdma`",
		"3200 of 3200 Gbps per node", "$55.04 per node-hour; $110.08 per hour at 2 node(s)", "```mermaid", "placement group p5-efa-gpu",
		"host: auto: the al2023-nvidia image runs nv-fabricmanager", "vpc.amazonaws.com/efa: \"32\"", "sizeLimit: 64Gi", "IPC_LOCK",
		"`endpoint-open`", "us-west-2 prices differ",
		"| VPC flow logs | ALL traffic to CloudWatch Logs `/gpucluster/p5-efa/vpc-flow-logs`, kept 90 days (deleted with the stack); $0.50 per GB delivered and $0.03 per GB-month stored")
	for _, m := range []string{"daemonset-kube-system-nvidia-device-plugin.yaml", "daemonset-kube-system-aws-efa-k8s-device-plugin.yaml"} {
		mustContain(t, m, read(t, filepath.Join(dir, "manifests", m)), "kind: DaemonSet", "nvidia.com/gpu")
	}
	if _, err := os.Stat(filepath.Join(dir, "manifests", "daemonset-kube-system-nvidia-fabricmanager.yaml")); err == nil {
		t.Error("fabric manager DaemonSet on an image that runs it on the host")
	}
}

func TestG6eENABundle(t *testing.T) {
	dir, _ := writeBundle(t, "g6e-ena")
	review := read(t, filepath.Join(dir, "REVIEW.md"))
	mustContain(t, "REVIEW.md", review, "`shm`", "`net-socket`", "none (ena-only): one ENA interface", "`efa-unused`",
		"PCIe without GPU peer-to-peer", "$10.49 per node-hour; $41.97 per hour at 4 node(s)")
	// No EFA device plugin, and no manifest asks for an EFA device.
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*"))
	for _, f := range files {
		if strings.Contains(filepath.Base(f), "efa-k8s-device-plugin") || strings.Contains(read(t, f), "vpc.amazonaws.com/efa") {
			t.Errorf("ENA-only stack has an EFA manifest: %s", f)
		}
	}
	mpijob := read(t, filepath.Join(dir, "manifests", "mpijob-default-gpu-nccl-allreduce.yaml"))
	mustContain(t, "MPIJob", mpijob, "replicas: 4", "- -np\n                - \"16\"\n", "nvidia.com/gpu: \"4\"", "- 4G\n", "- -n\n                - \"20\"\n")
	mustContain(t, "REVIEW.md", review, "Benchmark jobs (4 node(s))", "messages up to 4 GiB (g6e.12xlarge stages network traffic through host memory, where large messages take seconds each), 20 iterations",
		"kubectl apply -f manifests/mpijob-default-gpu-nccl-allreduce.yaml", "--stack g6e-ena --pool gpu", "no training job")
}

func TestKarpenterBundle(t *testing.T) {
	dir, _ := writeBundle(t, "karpenter-p5")
	mustContain(t, "chart", read(t, filepath.Join(dir, "manifests", "chart-karpenter-p5-karpenter.yaml")),
		"chart: oci://public.ecr.aws/karpenter/karpenter", "version: 1.15.2", "interruptionQueue: karpenter-p5-karpenter",
		"legacyNodeRepair: false", "rebootForRepair: false")
	mustContain(t, "EC2NodeClass", read(t, filepath.Join(dir, "manifests", "ec2nodeclass-karpenter-p5-gpu.yaml")),
		"placementGroupSelector:", "name: karpenter-p5-gpu", "interfaceType: efa-only", "role: karpenter-p5-karpenter-node", "alias: "+topology.KarpenterAL2023Alias)
	mustContain(t, "NodePool", read(t, filepath.Join(dir, "manifests", "nodepool-karpenter-p5-gpu.yaml")),
		"nvidia.com/gpu: \"32\"", "consolidationPolicy: WhenEmpty", "expireAfter: Never",
		"- nodes: \"0\"\n        reasons:\n          - Unhealthy\n") // a benchmark stack: no repair
	mustContain(t, "REVIEW.md", read(t, filepath.Join(dir, "REVIEW.md")), "0-4 (karpenter), 32 GPUs at most", "$0.00 per hour at 0 node(s), $220.16 at 4",
		"| Node repair | off: off in a benchmark stack", "the NodePool's disruption budget for Unhealthy nodes is 0",
		"The EFA installer 1.50 stack's tag, `"+topology.UnconfirmedTrainingImage+"`, is not the default")
}

// TestPlanRecordsResourceOptions: plan.json shows what destroy does besides the defaults (here
// the Karpenter pool's long delete timeout), and an empty object where nothing is set.
func TestPlanRecordsResourceOptions(t *testing.T) {
	dir, _ := writeBundle(t, "karpenter-p5")
	var p struct {
		Resources []struct {
			Type    string         `json:"type"`
			Options map[string]any `json:"options"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "plan.json"))), &p); err != nil {
		t.Fatal(err)
	}
	timed := 0
	for _, r := range p.Resources {
		if r.Options == nil {
			t.Fatalf("%s has no options object", r.Type)
		}
		if r.Type == "kubernetes:karpenter.sh/v1:NodePool" {
			if to, _ := r.Options["customTimeouts"].(map[string]any); to["delete"] != topology.KarpenterPoolDeleteTimeout {
				t.Errorf("NodePool options %v lack the delete timeout", r.Options)
			}
			timed++
		}
	}
	if timed != 1 {
		t.Errorf("%d NodePools in the karpenter-p5 plan, want 1", timed)
	}
}

func TestTwoRunsAreByteIdentical(t *testing.T) {
	for _, name := range []string{"mixed", "karpenter-p5"} {
		a, _ := writeBundle(t, name)
		b, _ := writeBundle(t, name)
		var filesA []string
		filepath.Walk(a, func(path string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(a, path)
				filesA = append(filesA, rel)
			}
			return nil
		})
		if len(filesA) < 3 {
			t.Fatalf("%s: bundle has %d files", name, len(filesA))
		}
		for _, f := range filesA {
			if read(t, filepath.Join(a, f)) != read(t, filepath.Join(b, f)) {
				t.Errorf("%s: %s differs between two runs", name, f)
			}
		}
	}
}

func TestInvalidConfigWritesNothing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "Pulumi.bad.yaml")
	os.WriteFile(bad, []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: p4d-efa, efaInterfaces: 9}]\n"), 0o644)
	out := filepath.Join(t.TempDir(), "review", "bad")
	_, err := Write(bad, out, testDay, nil)
	var ces topology.ConfigErrors
	if !errors.As(err, &ces) || ces[0].Key != "gpucluster:pools[0].efaInterfaces" {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
		t.Errorf("something was written for an invalid config: %v", err)
	}
}

func TestErrorFindingsCheckTheFinalSpec(t *testing.T) {
	spec, err := topology.LoadStack(stack("mixed"), testDay)
	if err != nil {
		t.Fatal(err)
	}
	if errs := countErrors(Review(spec)); errs != 0 {
		t.Fatalf("a valid stack has %d error findings", errs)
	}
	train := &spec.Pools[0]
	train.Placement.Strategy = topology.PlacementCluster                // a placement group on a Capacity Block
	train.Network.EFASecurityGroup = train.Network.EFASecurityGroup[:1] // ingress only
	train.AvailabilityZones = []string{"us-east-1a", "us-east-1c"}
	codes := map[string]bool{}
	for _, f := range Review(spec) {
		if f.Severity == topology.SeverityError {
			codes[f.Code] = true
		}
	}
	for _, want := range []string{"reserved-capacity-with-placement-group", "efa-security-group-not-self", "efa-pool-across-zones"} {
		if !codes[want] {
			t.Errorf("no error finding %s in %v", want, codes)
		}
	}
}

func countErrors(fs []Finding) int {
	r := Result{Findings: fs}
	return r.Errors()
}

// TestPricesMatchKarpentersTable reads Karpenter's generated price table from the module cache
// (the module build/crds pins) and compares every price used here.

// REVIEW.md states the whole hourly cost, item by item, reserved capacity apart.
func TestReviewStatesTheWholeCost(t *testing.T) {
	dir, _ := writeBundle(t, "mixed")
	mustContain(t, "REVIEW.md", read(t, filepath.Join(dir, "REVIEW.md")),
		"| Hourly cost | $30.60 per hour after `pulumi up`, $90.90 per hour at every pool's maximum",
		"| EKS control plane (Kubernetes 1.36) | $0.100 | $0.100 | standard support until 2027-08-02; $0.60 per hour after |", "| NAT gateway | $0.045 | $0.045 | plus $0.045 per GB it processes |",
		"| system nodes: 2 × m7i.large | $0.202 | $0.202 |", "| pool `infer`: 1 to 3 × g6e.48xlarge | $30.131 | $90.394 |",
		"Pool `train` (4 to 4 × p5.48xlarge) runs on reserved capacity, not in the totals", "Not hourly: VPC flow logs",
		// the summary's cell says what its totals leave out
		"; not counted: pool `train` (4 to 4 × p5.48xlarge) on reserved capacity, billed by its reservation whether used or not",
		// a pool that changes its profile's type or size is described as what it is
		"Profile `g6e-efa`: the g6e-efa topology on 0 to 3 × g6e.48xlarge (the profile's: 4 × g6e.12xlarge).",
		// the quota each class of pools needs; none for reserved capacity
		"| Running On-Demand G and VT instances | 576 | `infer` |",
		"- pool `train`: capacity-block cr-0123456789abcdef0 holds its instances; no on-demand quota is added for them.",
		"Values=g6e.48xlarge --region us-east-1` must list us-east-1a")
}

func TestQuotaWarningsReachTheReview(t *testing.T) {
	spec, err := topology.LoadStack("../../components/topology/testdata/warn/too-many-nodes.yaml", testDay)
	if err != nil || len(spec.Warnings) != 1 {
		t.Fatalf("%v, %d warnings", err, len(spec.Warnings))
	}
	for _, f := range Review(spec) {
		if f.Code == "aws-quota" && f.Severity == topology.SeverityWarning && strings.Contains(f.Message, "too-many-nodes.yaml:7: gpucluster:pools[0].maxNodes") {
			return
		}
	}
	t.Errorf("no aws-quota finding in %v", Review(spec))
}

// REVIEW.md says when the pools stop, how, and what keeps running until pulumi destroy.
func TestReviewStatesTheExpiry(t *testing.T) {
	at := func(s string) time.Time { // the instant the review is written at: the expiry ahead, then passed
		clock, _ := time.Parse(time.RFC3339, s)
		return clock
	}
	f := filepath.Join(t.TempDir(), "Pulumi.exp.yaml")
	os.WriteFile(f, []byte("config:\n  aws:region: us-east-1\n  gpucluster:expiresAt: \"2026-12-01T18:00:00Z\"\n  gpucluster:pools:\n    - {name: train, profile: p5-efa, nodes: 2}\n    - {name: burst, profile: karpenter-p5}\n"), 0o644)
	r, err := Evaluate(f, at("2026-11-23T12:00:00Z"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 0.10 control plane + 0.045 NAT + 2 × 0.1008 system nodes + 2 × 50 GiB of gp3 (0.08 × 100 / 730).
	mustContain(t, "REVIEW.md", string(r.Files["REVIEW.md"]), "Every GPU pool goes to zero nodes at **2026-12-01 18:00 UTC**",
		"pool `train` (managed node group): an EventBridge Scheduler one-time schedule calls `eks:UpdateNodegroupConfig`",
		"pool `burst` (Karpenter): the in-cluster CronJob `gpucluster-expiry`",
		"Until then the stack costs $110.48 per hour after `pulumi up`", // 2 × 55.04 + 0.10 + 0.045 + 2 × 0.1008 + 500 GiB of gp3
		"these keep running: EKS control plane (Kubernetes 1.36), NAT gateway, system nodes: 2 × m7i.large, EBS root volumes (gp3), about **$0.36 per hour**")
	if r, err = Evaluate(f, at("2026-12-02T00:00:00Z"), nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "REVIEW.md after the expiry", string(r.Files["REVIEW.md"]),
		"The expiry passed at **2026-12-01 18:00 UTC**: every GPU pool is at zero nodes, and `pulumi up` keeps it there until the expiry is extended (`gpucluster expire --stack exp --in 8h`, then `pulumi up`)")
}

// REVIEW.md lists everything the stack creates and what holds power: each IAM role with who may
// assume it and its policies, each ClusterRole and the admission policy that narrows one, each
// privileged or host-level pod (of the health gate, only its EFA check is privileged), and what is
// fetched at deploy.
func TestReviewStatesInventoryAndPower(t *testing.T) {
	dir, _ := writeBundle(t, "karpenter-p5")
	review := read(t, filepath.Join(dir, "REVIEW.md"))
	mustContain(t, "REVIEW.md", review,
		"## Inventory", "| `Network` karpenter-p5 | ", "aws ec2 Subnet × 4", "| `KarpenterPool` karpenter-p5-gpu-karpenter | kubernetes karpenter.k8s.aws EC2NodeClass × 1, kubernetes karpenter.sh NodePool × 1 |",
		"## IAM and cluster-wide power",
		"| `karpenter-p5-karpenter` | Service pods.eks.amazonaws.com | 1 inline",
		"| `karpenter-p5-karpenter-node` | Service ec2.amazonaws.com | AmazonEC2ContainerRegistryReadOnly, AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy |",
		"EKS Pod Identity `karpenter-p5-karpenter` gives a role to the service account `karpenter`.",
		"| `karpenter-p5-karpenter` | Service pods.eks.amazonaws.com | 1 inline (below) |",
		"`karpenter-p5-karpenter-controller` on role `karpenter-p5-karpenter`:",
		"- `AllowPassingInstanceRole`: allow iam:PassRole on <ARN of aws:iam/role:Role karpenter-p5-karpenter-node>; when StringEquals iam:PassedToService = ec2.amazonaws.com, ec2.amazonaws.com.cn",
		"- `AllowInterruptionQueueActions`: allow sqs:DeleteMessage, sqs:GetQueueUrl, sqs:ReceiveMessage on <ARN of aws:sqs/queue:Queue karpenter-p5-karpenter-interruption>",
		"- `AllowAPIServerEndpointDiscovery`: allow eks:DescribeCluster on arn:aws:eks:us-west-2:*:cluster/karpenter-p5",
		"- `gpucluster-health-gate`: nodes: patch",
		"- `gpucluster-health-gate` in namespace `default`: events: create",
		"**Admission policies** (what the API server refuses whatever RBAC grants):",
		"- `gpucluster-health-gate-own-node`, when `request.userInfo.username == \"system:serviceaccount:kube-system:gpucluster-health-gate\"`: the token names no node",
		"the health gate may patch only the node its pod runs on; the health gate may only remove gpucluster.io/health, and no other taint; the health gate may change no label but gpucluster.io/health-failed;",
		"the health gate may only report events about the node its pod runs on",
		"- DaemonSet `gpucluster-health-gate-gpu`: privileged (container efa-check)",
		// the MPI operator: cluster-wide only what is cluster-scoped; jobs and lease in their namespaces
		"- `mpi-operator`: priorityclasses: get, list, watch",
		"- `mpi-operator` in namespace `default`: configmaps, secrets, services: create, list, watch, update;",
		"- `mpi-operator` in namespace `mpi-operator`: **leases: * (every verb)**; events: create, patch",
		"- DaemonSet `aws-efa-k8s-device-plugin`: hostNetwork; host path /var/lib/kubelet/device-plugins; host path /dev/infiniband/; host path /opt/aws/neuron/; privileged",
		"- image `nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0` from nvcr.io (`gpucluster-health-gate-gpu`)",
		"- image `public.ecr.aws/amazonlinux/amazonlinux:2023.10.20260120.4` from public.ecr.aws (`gpucluster-efa-counters`, `gpucluster-health-gate-gpu`)",
		"- DaemonSet `gpucluster-efa-counters`: hostNetwork; host path /sys; host path /run/gpucluster/efa-counters",
		"- Helm chart `oci://public.ecr.aws/karpenter/karpenter` 1.15.2",
		"- `https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.2/manifests/base/kubeflow.org_mpijobs.yaml`, applied as is",
		"- image `nvcr.io/nvidia/k8s-device-plugin:v0.20.0` from nvcr.io (`nvidia-device-plugin`)",
		// its charts, here not rendered (no renderer): said, with why
		"**not rendered** (not asked to render charts). Its roles, webhooks and workloads are not in this review")
}

// What keeps running after the expiry is priced on the expiry's day: a 1.34 control plane whose
// standard support ends before it costs the extended price then, and the version line warns.
func TestReviewPricesWhatKeepsRunningOnTheExpirysDay(t *testing.T) {
	clock, _ := time.Parse(time.RFC3339, "2026-11-23T12:00:00Z")
	f := filepath.Join(t.TempDir(), "Pulumi.exp.yaml")
	os.WriteFile(f, []byte("config:\n  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"1.34\"\n  gpucluster:expiresAt: \"2026-12-05T18:00:00Z\"\n  gpucluster:pools:\n    - {name: train, profile: p5-efa, nodes: 2}\n"), 0o644)
	r, err := Evaluate(f, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 0.60 control plane (extended support from 2026-12-02) + 0.045 NAT + 2 × 0.1008 + 100 GiB of gp3.
	mustContain(t, "REVIEW.md", string(r.Files["REVIEW.md"]),
		"| EKS control plane (Kubernetes 1.34) | $0.100 | $0.600 | extended support from 2026-12-02, before the expiry: $0.60 per hour from then |",
		"these keep running: EKS control plane (Kubernetes 1.34), NAT gateway, system nodes: 2 × m7i.large, EBS root volumes (gp3), about **$0.86 per hour**",
		"Kubernetes 1.34 leaves EKS standard support on 2026-12-02")
}

// TestEveryInlinePolicyIsReadable: plan.json and REVIEW.md show every inline IAM policy of every
// stack statement by statement, an expiring stack's scheduler policy too: the text where a plan
// knows it, else the template with placeholders for the ARNs AWS gives at deploy, never
// "<unknown until deploy>" alone.
func TestEveryInlinePolicyIsReadable(t *testing.T) {
	files, _ := filepath.Glob("../../stacks/Pulumi.*.yaml")
	expiring := filepath.Join(t.TempDir(), "Pulumi.exp.yaml")
	os.WriteFile(expiring, []byte("config:\n  aws:region: us-east-1\n  gpucluster:expiresAt: \"2099-12-01T18:00:00Z\"\n  gpucluster:pools:\n    - {name: train, profile: p5-efa, nodes: 2}\n"), 0o644)
	inline := 0
	for _, f := range append(files, expiring) {
		r, err := Evaluate(f, testDay, nil)
		if err != nil {
			t.Fatal(err)
		}
		var p planJSON
		if err := json.Unmarshal(r.Files["plan.json"], &p); err != nil {
			t.Fatal(err)
		}
		for _, res := range p.Resources {
			if res.Type != rolePolicyType {
				continue
			}
			inline++
			doc := res.PolicyTemplate
			if text, _ := res.Inputs["policy"].(string); text != offline.Unknown {
				json.Unmarshal([]byte(text), &doc)
			} else if doc == nil {
				t.Errorf("%s: %s: no policy and no template", filepath.Base(f), res.Name)
			}
			statements, _ := mapOf(doc)["Statement"].([]any)
			if len(statements) == 0 {
				t.Errorf("%s: %s: no statements in %v", filepath.Base(f), res.Name, doc)
			}
		}
		if review := string(r.Files["REVIEW.md"]); strings.Contains(review, "its text is unknown until deploy") {
			t.Errorf("%s: REVIEW.md has an inline policy it cannot show", filepath.Base(f))
		}
	}
	if inline < len(files)+2 { // a flow-log policy per stack, the Karpenter controller's, the scheduler's
		t.Errorf("only %d inline policies in %d stacks", inline, len(files)+1)
	}
}

// REVIEW.md's GB200 card names the nvidia module option the user data sets, where and why; the
// node repair line says the benchmark stack leaves failed nodes alone.
func TestReviewStatesTheGB200ModuleOption(t *testing.T) {
	dir, _ := writeBundle(t, "gb200-nvl72")
	mustContain(t, "REVIEW.md", read(t, filepath.Join(dir, "REVIEW.md")),
		"| NVIDIA module options | `NVreg_GrdmaPciTopoCheckOverride=1`, written to `/etc/modprobe.d/50-gpucluster-nvidia.conf` by the node's user data: GPUDirect RDMA over EFA on p6e-gb200.36xlarge with driver 580.159.03",
		"| Node repair | off: off in a benchmark stack")
}

// TestReviewStatesTheMetrics: REVIEW.md says which metrics a stack installs, where, with what
// power and cost, and warns a benchmark stack that they run during its measurements; the
// CloudWatch agent's role and its Pod Identity are in the IAM table, and the add-ons are among
// what is fetched at deploy time.
func TestReviewStatesTheMetrics(t *testing.T) {
	dir, _ := writeBundle(t, "p5-efa")
	review := read(t, filepath.Join(dir, "REVIEW.md"))
	mustContain(t, "p5-efa REVIEW.md", review, "## Metrics", "NVIDIA's DCGM exporter (`"+topology.DCGMExporterImage+"`)",
		"on every node of pool(s) `gpu`", "`gpucluster.io/health=checking:NoSchedule`", "root with `SYS_ADMIN` added",
		"**During benchmarks:**", "not measured", "| warning | (cluster) | `metrics-during-benchmarks` | ../../stacks/Pulumi.p5-efa.yaml:12: gpucluster:observability",
		"DaemonSet `gpucluster-dcgm-exporter`: host path /var/lib/kubelet/pod-resources; adds SYS_ADMIN")
	dir, _ = writeBundle(t, "mixed")
	review = read(t, filepath.Join(dir, "REVIEW.md"))
	mustContain(t, "mixed REVIEW.md", review, "The EKS add-on `amazon-cloudwatch-observability`", "pool(s) `train`, `infer`",
		"| `mixed-cloudwatch-agent` | Service pods.eks.amazonaws.com | CloudWatchAgentServerPolicy |",
		"gives a role to the service account `cloudwatch-agent`", "EKS add-on `amazon-cloudwatch-observability`, EKS's default version",
		"EKS add-on `eks-pod-identity-agent`", `"containerLogs":{"enabled":false}`, "billed by CloudWatch per observation")
	if strings.Contains(review, "**During benchmarks:**") {
		t.Error("mixed runs no benchmarks, yet its review warns of them")
	}
	dir, _ = writeBundle(t, "dev")
	mustContain(t, "dev REVIEW.md", read(t, filepath.Join(dir, "REVIEW.md")), "## Metrics\n\nNone installed")
}
