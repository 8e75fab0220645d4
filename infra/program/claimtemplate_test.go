package program

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// channelClaimTemplate is the ResourceClaimTemplate the NVIDIA DRA driver's ComputeDomain
// controller makes for a domain's workload pods, rendered from the driver's own template in the
// module the harness pins (templates/compute-domain-workload-claim-template.tmpl.yaml) with the
// values its controller fills in (cmd/compute-domain-controller/resourceclaimtemplate.go,
// WorkloadResourceClaimTemplateManager.Create). A stand-in for the controller, named as one: it
// runs only beside GPUs on an NVLink fabric, and none is here. The finalizer it sets is left out:
// only its controller would remove it.
func channelClaimTemplate(t *testing.T, namespace string, cd topology.ComputeDomainSpec) map[string]any {
	t.Helper()
	mod, err := kubeapi.ModuleDir(kubeapi.DRADriverModule)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(mod, "templates", "compute-domain-workload-claim-template.tmpl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.New("claim").Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	uid := "00000000-0000-4000-8000-0000c0ffee00" // the ComputeDomain's, made up
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]any{
		"Namespace": namespace, "Name": cd.ClaimTemplate, "Finalizer": "resource.nvidia.com/computeDomain",
		"ComputeDomainLabelKey": "resource.nvidia.com/computeDomain", "ComputeDomainLabelValue": uid,
		"TargetLabelKey": "resource.nvidia.com/computeDomainTarget", "TargetLabelValue": "Workload",
		"DeviceClassName": topology.ComputeDomainChannelDeviceClass, "DriverName": "compute-domain.nvidia.com",
		"ChannelConfig": map[string]any{"APIVersion": topology.ComputeDomainAPIVersion, "Kind": "ComputeDomainChannelConfig",
			"DomainID": uid, "AllocationMode": "Single"},
	}); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj["metadata"].(map[string]any), "finalizers")
	return obj
}
