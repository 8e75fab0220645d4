package topology

import (
	"fmt"
	"strings"
)

// KeyObservability chooses the GPU and EFA metrics a stack installs on its nodes: off (the
// default, in every stack), cloudwatch or dcgm-exporter. On by choice only: each costs something
// (CloudWatch bills per observation; an exporter takes CPU and memory on every GPU node) and
// polls the GPUs while jobs run, which a benchmark stack must choose knowingly.
const KeyObservability = ConfigNamespace + ":observability"

// The metrics a stack may choose.
const (
	ObservabilityOff = "off"
	// ObservabilityCloudWatch is the amazon-cloudwatch-observability EKS add-on: Container
	// Insights with enhanced observability, whose CloudWatch agent collects GPU metrics from the
	// add-on's own DCGM exporter and each node's EFA counters per pod (amazon-cloudwatch-agent
	// PR #1117, v1.300037.0; the retransmit and impaired-connection counters from PR #1941,
	// v1.300063.0), with its IAM through EKS Pod Identity.
	ObservabilityCloudWatch = "cloudwatch"
	// ObservabilityDCGMExporter is NVIDIA's DCGM exporter on every GPU node, serving Prometheus
	// metrics for a Prometheus the team runs.
	ObservabilityDCGMExporter = "dcgm-exporter"
)

// ObservabilityModes are the values KeyObservability takes.
var ObservabilityModes = []string{ObservabilityOff, ObservabilityCloudWatch, ObservabilityDCGMExporter}

// ObservabilitySpec is what the stack's metrics are and where they run.
type ObservabilitySpec struct {
	Mode string `json:"mode"`
	// Pools are the GPU pools whose nodes the GPU metrics cover: every pool of the stack.
	Pools []string `json:"pools,omitempty"`
	// Tolerations are every taint gpucluster puts on those nodes (NodeTolerations: each pool's,
	// and the health gate's startup taint, which `gpucluster health` holds a node with too), so
	// the metrics are there from a node's first minute, through a health check and a failed
	// gate: a node that failed its gate is the one whose metrics are wanted.
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	DCGMExporter *DCGMExporterSpec `json:"dcgmExporter,omitempty"`
	CloudWatch   *CloudWatchSpec   `json:"cloudWatch,omitempty"`
}

// On reports whether the stack installs metrics.
func (o ObservabilitySpec) On() bool { return o.Mode != "" && o.Mode != ObservabilityOff }

// DCGMExporterSpec is NVIDIA's exporter as a DaemonSet of gpucluster's own, with NVIDIA's image
// and the settings of NVIDIA's chart (NVIDIA/dcgm-exporter deployment/values.yaml and
// templates/daemonset.yaml, tag 4.5.3-4.8.2): its arguments, port, probes, security context and
// resources. Not the chart itself: its repository (https://nvidia.github.io/dcgm-exporter/
// helm-charts) is a GitHub Pages site no machine of the tier reaches, and two of its defaults
// would have to be undone anyway: it tolerates only the control-plane taint, so it schedules on
// no tainted GPU node (NVIDIA/dcgm-exporter#731, closed unchanged: "easy enough to override helm
// defaults"), and it creates a ServiceMonitor, which fails without the Prometheus Operator's CRDs.
type DCGMExporterSpec struct {
	// Name is the DaemonSet's and the Service's, and its pods' app.kubernetes.io/name.
	Name  string `json:"name"`
	Image string `json:"image"`
	// Port serves /metrics and /health (the chart's service.port and address ":9400").
	Port int `json:"port"`
	// CollectIntervalMillis is how often the exporter samples the GPUs: dcgm-exporter's own
	// default (--collect-interval, 30000 ms: pkg/cmd/app.go).
	CollectIntervalMillis int `json:"collectIntervalMillis"`
	// Counters is the metric list the image ships (/etc/dcgm-exporter/default-counters.csv:
	// clocks, temperatures, power, utilisation, memory, XID errors, PCIe replays, NVLink
	// bandwidth, row remapping, and five DCGM_FI_PROF_* profiling fields, which need SYS_ADMIN).
	Counters string `json:"counters"`
}

// CloudWatchSpec is the EKS add-on and the identity its agent runs with.
type CloudWatchSpec struct {
	AddonName string `json:"addonName"`
	// Namespace and ServiceAccount are where the add-on runs its CloudWatch agent, whose
	// identity the Pod Identity association gives (CloudWatch user guide,
	// install-CloudWatch-Observability-EKS-addon: namespace amazon-cloudwatch, service account
	// cloudwatch-agent; since chart 6.0.1 its cluster scraper uses the same account).
	Namespace      string `json:"namespace"`
	ServiceAccount string `json:"serviceAccount"`
	// PolicyARN is the AWS managed policy the agent's role holds: CloudWatchAgentServerPolicy,
	// which the add-on's quick start attaches (X-Ray's write policy only matters to Application
	// Signals traces, which nothing here sends).
	PolicyARN string `json:"policyArn"`
	// PodIdentityAgentAddon is the add-on that hands pods their Pod Identity credentials
	// (NeedsPodIdentityAgent); EKS Pod Identity needs it outside Auto Mode (EKS user guide,
	// pod-id-agent-setup).
	PodIdentityAgentAddon string `json:"podIdentityAgentAddon"`
	// ConfigurationValues are the add-on's whole configuration (EKS replaces it whole: "Any value
	// that you leave out returns to its default", CloudWatch user guide,
	// eks-observability-addon-configure); the add-on and its Helm chart take the same values
	// (same page), so the keys are the chart's (aws-observability/helm-charts,
	// charts/amazon-cloudwatch-observability/values.yaml, 6.4.0).
	ConfigurationValues map[string]any `json:"configurationValues"`
}

// The DCGM exporter's fixed facts.
const (
	DCGMExporterName = "gpucluster-dcgm-exporter"
	// DCGMExporterImage is the exporter release the CloudWatch add-on 6.4.0 also ships
	// (aws-observability/helm-charts RELEASE_NOTES, v6.4.0: "DCGM Exporter
	// 4.6.0-4.8.3-distroless"; NVIDIA/dcgm-exporter#712, the 4.8.3 release), distroless as
	// NVIDIA's chart has pulled by default since 4.8.2. Pinned by exact tag: nvcr.io cannot be
	// asked for its digest from here.
	DCGMExporterImage = "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
	// DCGMExporterPort is the chart's service port.
	DCGMExporterPort = 9400
	// dcgmExporterIntervalMillis is dcgm-exporter's default collect interval.
	dcgmExporterIntervalMillis = 30000
	// DCGMExporterCapability is the one capability the exporter adds: "Required for profiling
	// metrics (DCGM_FI_PROF_*)" (the chart's values.yaml securityContext), of which the image's
	// list has DCGMExporterProfilingFields.
	DCGMExporterCapability      = "SYS_ADMIN"
	DCGMExporterProfilingFields = 5
	// DCGMExporterCounters is where the image keeps its default metric list (its Dockerfile copies
	// etc/ to /etc/dcgm-exporter; the chart's arguments name this file).
	DCGMExporterCounters = "/etc/dcgm-exporter/default-counters.csv"
)

// DCGMExporterRequests and DCGMExporterLimits are the chart's resources for the exporter
// (values.yaml resources): what it takes of every GPU node, within the room the training pods'
// sizing leaves for node agents (daemonSetCPUMillis, daemonSetMemoryMiB).
var (
	DCGMExporterRequests = map[string]string{"cpu": "100m", "memory": "128Mi"}
	DCGMExporterLimits   = map[string]string{"cpu": "200m", "memory": "512Mi"}
)

// CloudWatchAgentRole is the IAM role the CloudWatch agent of a cluster takes.
func CloudWatchAgentRole(cluster string) string { return cluster + "-cloudwatch-agent" }

// The CloudWatch add-on's fixed facts.
const (
	CloudWatchAddon          = "amazon-cloudwatch-observability"
	CloudWatchNamespace      = "amazon-cloudwatch"
	CloudWatchServiceAccount = "cloudwatch-agent"
	PodIdentityAgentAddon    = "eks-pod-identity-agent"
	cloudWatchAgentPolicy    = "CloudWatchAgentServerPolicy"
)

// deriveObservability is the stack's metrics: mode as the stack file chose it ("" is off). Each
// pool's DCGMExporter decision says whether the exporter runs on its nodes.
func deriveObservability(mode, region string, pools []PoolSpec) ObservabilitySpec {
	o := ObservabilitySpec{Mode: mode}
	exporter := Decision{false, "no " + ObservabilityDCGMExporter + " chosen in " + KeyObservability}
	if mode == ObservabilityDCGMExporter {
		exporter = Decision{true, KeyObservability + ": " + ObservabilityDCGMExporter + " exports every GPU node's metrics"}
	}
	for i := range pools {
		pools[i].InCluster.DCGMExporter = exporter
	}
	if !o.On() {
		o.Mode = ObservabilityOff
		return o
	}
	for _, p := range pools {
		o.Pools = append(o.Pools, p.Name)
	}
	o.Tolerations = NodeTolerations(pools)
	switch mode {
	case ObservabilityDCGMExporter:
		o.DCGMExporter = &DCGMExporterSpec{Name: DCGMExporterName, Image: DCGMExporterImage, Port: DCGMExporterPort,
			CollectIntervalMillis: dcgmExporterIntervalMillis, Counters: DCGMExporterCounters}
	case ObservabilityCloudWatch:
		o.CloudWatch = &CloudWatchSpec{AddonName: CloudWatchAddon, Namespace: CloudWatchNamespace, ServiceAccount: CloudWatchServiceAccount,
			PolicyARN:             "arn:" + Partition(region) + ":iam::aws:policy/" + cloudWatchAgentPolicy,
			PodIdentityAgentAddon: PodIdentityAgentAddon, ConfigurationValues: cloudWatchValues(o)}
	}
	return o
}

// cloudWatchValues is the add-on's configuration:
//   - tolerations: every workload's, the chart's own default (values.yaml `tolerations: [{operator:
//     Exists}]`), written out because the configuration replaces the defaults whole;
//   - the DCGM exporter on the stack's GPU pools, by gpucluster's pool label, tolerating their
//     taints: the chart places it by a list of instance types (values.yaml dcgmExporter.affinity)
//     that 6.4.0 lacks g7e in, so a g7e pool would have no GPU metrics;
//   - containerLogs off: this key is about metrics; Fluent Bit would ship every container's log
//     to CloudWatch Logs, billed per GB, which a team turns on knowingly.
//
// The operator keeps the chart's placement (no tolerations): it runs on the untainted system nodes.
func cloudWatchValues(o ObservabilitySpec) map[string]any {
	var tolerations []any
	for _, t := range o.Tolerations {
		tolerations = append(tolerations, t.Map())
	}
	pools := make([]any, len(o.Pools))
	for i, p := range o.Pools {
		pools[i] = p
	}
	return map[string]any{
		"tolerations":   []any{map[string]any{"operator": "Exists"}},
		"containerLogs": map[string]any{"enabled": false},
		"dcgmExporter": map[string]any{
			"tolerations": tolerations,
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
					map[string]any{"key": LabelPool, "operator": "In", "values": pools},
				}}},
			}}},
		},
	}
}

// NeedsPodIdentityAgent reports whether the stack installs the EKS Pod Identity Agent add-on: a
// Karpenter controller or the CloudWatch agent takes its role through it. One per cluster: EKS
// refuses a second add-on of the same name.
func (s StackSpec) NeedsPodIdentityAgent() bool {
	if s.Observability.CloudWatch != nil {
		return true
	}
	for _, p := range s.Pools {
		if p.Provisioner == ProvisionerKarpenter {
			return true
		}
	}
	return false
}

// Map is the toleration as a Kubernetes object's plain values.
func (t Toleration) Map() map[string]any {
	m := map[string]any{"operator": t.Operator}
	if t.Key != "" {
		m["key"] = t.Key
	}
	if t.Value != "" {
		m["value"] = t.Value
	}
	if t.Effect != "" {
		m["effect"] = t.Effect
	}
	return m
}

// observabilityProblem is what is wrong with a value of KeyObservability, and its fix; "" when
// it is one of ObservabilityModes.
func observabilityProblem(v string) (problem, fix string) {
	for _, m := range ObservabilityModes {
		if v == m {
			return "", ""
		}
	}
	return fmt.Sprintf("unknown metrics choice %q%s", v, Suggest(v, ObservabilityModes)),
		"use " + strings.Join(ObservabilityModes, ", ") + " (see docs/stacks.md)"
}

// ObservabilityDuringBenchmarks is the warning a benchmark stack with metrics gets: the
// exporter samples every GPU while the benchmarks run. What that costs a measurement was not
// measured (no GPU here); a run with the metrics off is the baseline.
func ObservabilityDuringBenchmarks(mode string) string {
	sampling := "the add-on's DCGM exporter samples every GPU"
	if mode == ObservabilityDCGMExporter {
		sampling = fmt.Sprintf("the DCGM exporter samples every GPU every %d s, %d profiling fields included", dcgmExporterIntervalMillis/1000, DCGMExporterProfilingFields)
	}
	return fmt.Sprintf("%s runs during the benchmarks: %s, and what that costs a measurement is not measured (no GPU was at hand); "+
		"a run of the stack with %s: %s is the baseline to compare with", mode, sampling, KeyObservability, ObservabilityOff)
}
