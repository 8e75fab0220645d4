package kueue

import (
	"encoding/json"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Frameworks are the Kueue integrations of the jobs gpucluster makes (components/benchjobs: MPIJob
// and TrainJob). Only these: a framework Kueue integrates makes its webhook for that kind
// fail-closed (charts/kueue/templates/webhook/manifests.yaml), and the release's default list
// has Deployment, Pod and StatefulSet. With those, every Deployment created while Kueue does not
// serve yet — the Trainer's, JobSet's, the MPI operator's, created beside it on the first `up` —
// is refused ("no endpoints available for service …-kueue-webhook-service"), and pulumi-kubernetes
// retries a create only when the kind is not found.
var Frameworks = []string{"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"}

// Resources is the configuration's resources section: a pod's claim on its ComputeDomain's IMEX
// channel counts as topology.ResourceIMEXChannel, which an UltraServer pool's ClusterQueue gives
// a quota of one per node, so that Kueue admits a job on the pool whole. Without the mapping
// Kueue v0.19.2 holds every job with a DRA claim inadmissible (KueueDRAIntegration, beta and on
// since v0.18: pkg/features/kube_features.go).
func Resources() map[string]any {
	return map[string]any{"deviceClassMappings": []any{map[string]any{
		"name": topology.ResourceIMEXChannel, "deviceClassNames": []any{topology.ComputeDomainChannelDeviceClass}}}}
}

// ManagerConfig is the controller manager's configuration (the chart's
// managerConfig.controllerManagerConfigYaml): the release's own (charts/kueue/values.yaml at
// v0.19.2) with three changes. Its integrations are Frameworks. Its managedJobsNamespaceSelector
// selects the jobs' namespace alone: every job and pod webhook of the chart takes that selector,
// so Kueue — one replica — gates the jobs, not every pod of the cluster (the release's selector is
// every namespace but kube-system and its own). Its resources map the IMEX channel (Resources).
// The chart adds the certificate settings for its Service and Secret names.
func ManagerConfig() string {
	config := map[string]any{
		"apiVersion":     "config.kueue.x-k8s.io/v1beta2",
		"kind":           "Configuration",
		"health":         map[string]any{"healthProbeBindAddress": ":8081"},
		"metrics":        map[string]any{"bindAddress": ":8443"},
		"webhook":        map[string]any{"port": 9443},
		"leaderElection": map[string]any{"leaderElect": true, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
		"controller": map[string]any{"groupKindConcurrency": map[string]any{
			"Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
			"ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
		"clientConnection": map[string]any{"qps": 300, "burst": 500},
		"integrations":     map[string]any{"frameworks": Frameworks},
		"managedJobsNamespaceSelector": map[string]any{"matchLabels": map[string]any{
			"kubernetes.io/metadata.name": topology.BenchmarkNamespace}},
		"resources": Resources(),
	}
	out, _ := json.Marshal(config) // JSON is YAML; a map of strings and numbers always marshals
	return string(out)
}
