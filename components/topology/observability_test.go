package topology

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func observabilityStack(t *testing.T, region, extra string) (StackSpec, error) {
	t.Helper()
	st, err := ParseStack("s.yaml", []byte("config:\n  aws:region: "+region+"\n  gpucluster:trainingImage: registry.example/nccl-tests:sm120\n"+
		"  gpucluster:pools:\n  - {name: h100, profile: p5-efa}\n  - {name: rtx, profile: g7e-efa, taints: [{key: team, value: vision, effect: NoSchedule}], tolerations: [{key: team, operator: Equal, value: vision, effect: NoSchedule}]}\n"+extra))
	if err != nil {
		return StackSpec{}, err
	}
	return DeriveStack(st, planDay)
}

// TestObservabilityOffByDefault: a stack that says nothing installs no metrics, benchmark
// stack or not.
func TestObservabilityOffByDefault(t *testing.T) {
	for _, extra := range []string{"", "  gpucluster:benchmarks: {enabled: true}\n", "  gpucluster:observability: off\n"} {
		spec, err := observabilityStack(t, "us-east-1", extra)
		if err != nil {
			t.Fatal(err)
		}
		if o := spec.Observability; o.On() || o.Mode != ObservabilityOff || o.DCGMExporter != nil || o.CloudWatch != nil {
			t.Errorf("%q: %+v, want off", extra, o)
		}
		if len(spec.Warnings) > 0 {
			t.Errorf("%q: warnings %v", extra, spec.Warnings)
		}
	}
}

// TestObservabilityCoversEveryGPUNode: both choices cover every pool, g7e included (which the
// add-on's own instance-type list lacks), and tolerate every taint gpucluster puts on a GPU node:
// each pool's own, its startup taints, and the one `gpucluster health` holds a node with.
func TestObservabilityCoversEveryGPUNode(t *testing.T) {
	for _, mode := range []string{ObservabilityDCGMExporter, ObservabilityCloudWatch} {
		spec, err := observabilityStack(t, "us-east-1", "  gpucluster:observability: "+mode+"\n")
		if err != nil {
			t.Fatal(err)
		}
		o := spec.Observability
		if !slices.Equal(o.Pools, []string{"h100", "rtx"}) {
			t.Errorf("%s: pools %v", mode, o.Pools)
		}
		for _, p := range spec.Pools {
			taints := append(append(append([]Taint{}, p.Taints...), p.StartupTaints...), HealthTaint)
			for _, taint := range taints {
				if !slices.ContainsFunc(o.Tolerations, func(tol Toleration) bool { return tol.Tolerates(taint) }) {
					t.Errorf("%s: pool %s's taint %+v is not tolerated by %+v", mode, p.Name, taint, o.Tolerations)
				}
			}
		}
		for _, p := range spec.Pools {
			if p.InCluster.DCGMExporter.Deploy != (mode == ObservabilityDCGMExporter) || p.InCluster.DCGMExporter.Reason == "" {
				t.Errorf("%s: pool %s's exporter decision %+v", mode, p.Name, p.InCluster.DCGMExporter)
			}
		}
		if !spec.NeedsPodIdentityAgent() != (mode == ObservabilityDCGMExporter) {
			t.Errorf("%s: pod identity agent %v", mode, spec.NeedsPodIdentityAgent())
		}
		switch mode {
		case ObservabilityDCGMExporter:
			if d := o.DCGMExporter; d == nil || d.Image != DCGMExporterImage || d.Port != 9400 || o.CloudWatch != nil {
				t.Errorf("dcgm-exporter: %+v %+v", o.DCGMExporter, o.CloudWatch)
			}
		case ObservabilityCloudWatch:
			cw := o.CloudWatch
			if cw == nil || o.DCGMExporter != nil {
				t.Fatalf("cloudwatch: %+v", o)
			}
			if cw.PolicyARN != "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy" {
				t.Errorf("policy %s", cw.PolicyARN)
			}
			dcgm := cw.ConfigurationValues["dcgmExporter"].(map[string]any)
			terms := dcgm["affinity"].(map[string]any)["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"].([]any)
			expr := terms[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
			if len(terms) != 1 || expr["key"] != LabelPool || expr["operator"] != "In" || !slices.Equal(expr["values"].([]any), []any{"h100", "rtx"}) {
				t.Errorf("the add-on's DCGM exporter is placed by %v", terms)
			}
			if n := len(dcgm["tolerations"].([]any)); n != len(o.Tolerations) {
				t.Errorf("the add-on's DCGM exporter has %d tolerations, want %d", n, len(o.Tolerations))
			}
			if logs := cw.ConfigurationValues["containerLogs"].(map[string]any); logs["enabled"] != false {
				t.Errorf("container logs %v: a metrics key ships no logs", logs)
			}
		}
	}
}

// TestObservabilityPolicyFollowsThePartition: the managed policy's ARN is the region's partition's.
func TestObservabilityPolicyFollowsThePartition(t *testing.T) {
	spec, err := observabilityStack(t, "us-gov-west-1", "  gpucluster:observability: cloudwatch\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Observability.CloudWatch.PolicyARN; got != "arn:aws-us-gov:iam::aws:policy/CloudWatchAgentServerPolicy" {
		t.Errorf("policy %s", got)
	}
}

// TestObservabilityRefusesUnknownChoices: a wrong value is refused with its line and the values
// that exist, before anything is created.
func TestObservabilityRefusesUnknownChoices(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"dcgm", `unknown metrics choice "dcgm"`},
		{"cloud-watch", `did you mean "cloudwatch"`},
		{"true", `unknown metrics choice "true"`},
		{"[cloudwatch]", "a single value"},
	} {
		_, err := observabilityStack(t, "us-east-1", "  gpucluster:observability: "+c.value+"\n")
		var errs ConfigErrors
		if !errors.As(err, &errs) || len(errs) != 1 {
			t.Fatalf("%s: %v", c.value, err)
		}
		e := errs[0]
		if e.Key != KeyObservability || e.Line != 7 || !strings.Contains(e.Message, c.want) || (c.want != "a single value" && !strings.Contains(e.Fix, "dcgm-exporter")) {
			t.Errorf("%s: %+v", c.value, e)
		}
	}
}

// TestObservabilityDuringBenchmarksWarns: a benchmark stack may choose metrics, and is told at
// the key's line that they run during its measurements.
func TestObservabilityDuringBenchmarksWarns(t *testing.T) {
	spec, err := observabilityStack(t, "us-east-1", "  gpucluster:benchmarks: {enabled: true}\n  gpucluster:observability: dcgm-exporter\n")
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Observability.On() {
		t.Fatal("asked for, the metrics are off")
	}
	if len(spec.Warnings) != 1 || spec.Warnings[0].Key != KeyObservability || spec.Warnings[0].Line != 8 ||
		!strings.Contains(spec.Warnings[0].Message, "every 30 s") || !strings.Contains(spec.Warnings[0].Message, "not measured") {
		t.Errorf("warnings %+v", spec.Warnings)
	}
}
