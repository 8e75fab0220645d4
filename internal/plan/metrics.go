package plan

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// metricsSection says which GPU and EFA metrics the stack installs, where they run, with what
// power, and what they cost (gpucluster:observability).
func metricsSection(s topology.StackSpec) string {
	o := s.Observability
	var b strings.Builder
	b.WriteString("## Metrics\n\n")
	if !o.On() {
		fmt.Fprintf(&b, "None installed (`%s: %s`, the default). `%s: %s` installs NVIDIA's DCGM exporter for a Prometheus; `%s` the CloudWatch add-on with GPU and EFA metrics (docs/stacks.md).\n\n",
			topology.KeyObservability, topology.ObservabilityOff, topology.KeyObservability, topology.ObservabilityDCGMExporter, topology.ObservabilityCloudWatch)
		return b.String()
	}
	var tolerated []string
	for _, t := range o.Tolerations {
		taint := t.Key
		if t.Operator == "Equal" {
			taint += "=" + t.Value
		}
		tolerated = append(tolerated, fmt.Sprintf("`%s:%s`", taint, t.Effect))
	}
	where := fmt.Sprintf("on every node of pool(s) `%s`, tolerating %s (every taint gpucluster puts on them, the health gate's and `gpucluster health`'s included)",
		strings.Join(o.Pools, "`, `"), strings.Join(tolerated, ", "))
	switch {
	case o.DCGMExporter != nil:
		d := o.DCGMExporter
		fmt.Fprintf(&b, "NVIDIA's DCGM exporter (`%s`), the DaemonSet `%s` in `kube-system` %s. ", d.Image, d.Name, where)
		fmt.Fprintf(&b, "It samples every GPU each %d s (dcgm-exporter's default) with the image's metric list (`%s`, %d `DCGM_FI_PROF_*` profiling fields among them) "+
			"and serves them on port %d (`/metrics`), behind the Service `%s`; its pods carry `prometheus.io/scrape`. No ServiceMonitor: gpucluster installs no Prometheus.\n\n",
			d.CollectIntervalMillis/1000, d.Counters, topology.DCGMExporterProfilingFields, d.Port, d.Name)
		fmt.Fprintf(&b, "- **Power:** root with `%s` added (NVIDIA's chart's own setting: the profiling fields need it), no privilege escalation, the kubelet's pod-resources socket read-only, no service-account token, no GPU requested (it sees the GPUs through `NVIDIA_VISIBLE_DEVICES=all`).\n",
			topology.DCGMExporterCapability)
		req, limit := topology.DCGMExporterRequests, topology.DCGMExporterLimits
		fmt.Fprintf(&b, "- **Cost:** no AWS charge; %s CPU and %s memory requested on each GPU node (limits %s, %s), within the room the training pods' sizes leave for node agents.\n",
			req["cpu"], req["memory"], limit["cpu"], limit["memory"])
	case o.CloudWatch != nil:
		cw := o.CloudWatch
		fmt.Fprintf(&b, "The EKS add-on `%s` (Container Insights with enhanced observability) at EKS's default version for Kubernetes %s, and `%s`, which hands its agent the role below through EKS Pod Identity. "+
			"EKS installs their objects: they are not in `manifests/`. Its CloudWatch agent runs on every node, its DCGM exporter %s, collecting GPU metrics and each pod's EFA counters (bytes, retransmits, timeouts, unresponsive and impaired peers).\n\n",
			cw.AddonName, s.Cluster.KubernetesVersion, cw.PodIdentityAgentAddon, where)
		fmt.Fprintf(&b, "- **Power:** the role `%s` holds `%s`, for the service account `%s` in `%s`. The add-on's agent runs with the host's network and reads `/sys` and the kubelet's pod-resources; its operator runs admission webhooks (Application Signals' instrumentation).\n",
			topology.CloudWatchAgentRole(s.Cluster.Name), cw.PolicyARN, cw.ServiceAccount, cw.Namespace)
		fmt.Fprintf(&b, "- **Configuration** (EKS replaces it whole): `%s`. Container logs stay off: shipping every container's log is billed per GB.\n", configJSON(cw.ConfigurationValues))
		b.WriteString("- **Cost:** billed by CloudWatch per observation (Container Insights with enhanced observability), by node, pod and container count, not by the hour: not in the Cost table's totals. The price per observation is on https://aws.amazon.com/cloudwatch/pricing/ and could not be read from here.\n")
	}
	if s.Benchmarks.Enabled {
		fmt.Fprintf(&b, "- **During benchmarks:** %s.\n", topology.ObservabilityDuringBenchmarks(o.Mode))
	}
	b.WriteString("\n")
	return b.String()
}

// configJSON is an add-on's configuration as `pulumi up` sends it.
func configJSON(v map[string]any) string {
	b, _ := json.Marshal(v) // plain values: cannot fail
	return string(b)
}
