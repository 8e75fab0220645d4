package topology

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// HealthTaint keeps jobs off a GPU node until its health gate has checked it: every node of every
// GPU pool starts with it (a managed node group's taint, a Karpenter NodePool's startupTaint), and
// the pool's health gate, a DaemonSet, removes it once the node has the GPUs, NVLink fabric and
// EFA devices its pool was planned with. It also stands for fabric manager: on an NVSwitch node
// the gate first waits until CUDA works, which it does only once fabric manager has set the fabric
// up (CUDA error 802, "system not yet initialized", until then). The in-cluster pieces tolerate
// it; training and benchmark pods do not.
var HealthTaint = Taint{Key: labelDomain + "health", Value: "checking", Effect: "NoSchedule"}

// LabelHealthFailed is on a node whose health gate failed, naming the first failing check (one
// of HealthChecks); the gate's Warning event on the node says what it found. The node keeps
// HealthTaint, so no job lands there, as SageMaker HyperPod labels a node its deep health checks
// failed (HyperPod "Resilience": sagemaker.amazonaws.com/node-health-status=Unschedulable).
const LabelHealthFailed = labelDomain + "health-failed"

// The health gate's checks, in the order it runs them: each is the value LabelHealthFailed
// takes when it fails.
const (
	HealthCheckCUDA     = "cuda"         // CUDA runs (on NVSwitch nodes: fabric manager serves)
	HealthCheckGPUCount = "gpu-count"    // nvidia-smi -q: as many GPUs as the instance type has
	HealthCheckGPUModel = "gpu-model"    // nvidia-smi -q: every GPU is the instance type's model
	HealthCheckFabric   = "fabric-state" // nvidia-smi -q: every GPU's NVLink fabric Completed, Success
	HealthCheckNVLink   = "nvlink"       // nvidia-smi topo -m: every GPU pair joined over NVLink
	HealthCheckEFA      = "efa-devices"  // fi_info -p efa: the pool's EFA devices visible to libfabric
)

// HealthChecks are every check's name, in the gate's order.
var HealthChecks = []string{HealthCheckCUDA, HealthCheckGPUCount, HealthCheckGPUModel, HealthCheckFabric, HealthCheckNVLink, HealthCheckEFA}

// HealthGateSpec is what a pool's health gate checks on each of its nodes before it lifts
// HealthTaint. The GPU checks run unprivileged; only the EFA check is privileged (see EFADevices).
type HealthGateSpec struct {
	// Checks are the names of the checks this pool runs, in order.
	Checks []string `json:"checks"`
	// GPUs and GPUModel: nvidia-smi must list exactly GPUs GPUs, each a GPUModel (its product
	// name is GPUModel, or starts with it and a space or hyphen: "NVIDIA H100 80GB HBM3").
	GPUs     int    `json:"gpus"`
	GPUModel string `json:"gpuModel"`
	// WaitForCUDA: CUDA must run before the other checks (NVSwitch nodes: fabric manager).
	WaitForCUDA bool `json:"waitForCuda"`
	// FabricState: every GPU's fabric state must reach Completed with status Success (NVSwitch
	// GPUs of Hopper and later report it; A100 reports none).
	FabricState bool `json:"fabricState"`
	// NVLink: every pair of GPUs must be joined over NVLink in nvidia-smi's topology matrix.
	NVLink bool `json:"nvlink"`
	// EFADevices is how many EFA devices libfabric must list (fi_info -p efa, reliable-datagram
	// endpoints, one per device); 0: no EFA check. Opening the devices (/dev/infiniband) takes the
	// device cgroup's permission, which a container has only when privileged or when the EFA
	// device plugin grants it the devices; a grant would hold them from the jobs for as long as
	// the gate's pod lives, and a DaemonSet's pod never ends. So this one check runs privileged.
	EFADevices int `json:"efaDevices"`
	// WaitSeconds bounds the waits (CUDA, fabric state); a node not ready by then fails.
	WaitSeconds int `json:"waitSeconds"`
	// GPUChecksSysAdminBound: the GPU checks' container holds CAP_SYS_ADMIN in its bounding set
	// (and nowhere else: it runs as nobody, with no privilege escalation), because the image's
	// NVIDIA container toolkit shows an unprivileged container no GPU. The toolkit hands the
	// devices NVIDIA_VISIBLE_DEVICES names to a container only when it is "privileged", which it
	// reads as CAP_SYS_ADMIN in the bounding set ("allow non-root users to access the privileged
	// NVIDIA capabilities", nvidia-container-toolkit v1.17.8 internal/config/image/privileged.go),
	// or when accept-nvidia-visible-devices-envvar-when-unprivileged is on
	// (cmd/nvidia-container-runtime-hook/container_config.go getDevices). The EKS AL2023 image
	// leaves it on (the toolkit's default); Bottlerocket sets it from
	// settings.nvidia-container-runtime.visible-devices-envvar-when-unprivileged, default false
	// (bottlerocket-core-kit packages/nvidia-container-toolkit/nvidia-container-toolkit-config-k8s),
	// so there the checks would see no GPU and fail every node. Turning that setting on would
	// show every GPU to every unprivileged pod of the node; the bounding capability is the gate's
	// alone. Requesting the node's nvidia.com/gpu instead would hold every GPU from the jobs for as
	// long as the gate's pod lives.
	GPUChecksSysAdminBound bool `json:"gpuChecksSysAdminBound,omitempty"`
	// FabricManagerStatus is the node's file where gpucluster's fabric-manager DaemonSet says what
	// became of its start (FabricManagerStatusFile), on pools where that DaemonSet runs it; "" on
	// the others. While CUDA is not ready the gate reads it, fails the node at once with fabric
	// manager's reason when it could not start (a driver of another version, an image without
	// nv-fabricmanager), and names it when fabric manager never started at all.
	FabricManagerStatus string `json:"fabricManagerStatus,omitempty"`
}

// HealthWaitSeconds is how long the gate waits for CUDA and the fabric: fabric manager
// configures an HGX board's NVSwitches in well under a minute after it starts, so ten minutes
// is a node that will not come up, not a slow one.
const HealthWaitSeconds = 600

// deriveHealthGate is the pool's health gate: the instance's GPUs and model, the fabric checks of
// NVSwitch types, and the pool's EFA interfaces.
func deriveHealthGate(it catalog.InstanceType, fm FabricManagerDecision, efa int, family AMIFamily) HealthGateSpec {
	g := HealthGateSpec{GPUs: it.GPUCount, GPUModel: it.GPUModel, WaitForCUDA: fm.Required,
		NVLink: it.Interconnect == catalog.InterconnectNVSwitch, EFADevices: efa, WaitSeconds: HealthWaitSeconds,
		GPUChecksSysAdminBound: family == AMIBottlerocketNVIDIA}
	if fm.Deploy {
		g.FabricManagerStatus = FabricManagerStatusFile
	}
	g.FabricState = g.NVLink && computeMajor(it.ComputeCapability) >= 9
	for _, c := range HealthChecks {
		switch {
		case c == HealthCheckCUDA && !g.WaitForCUDA, c == HealthCheckFabric && !g.FabricState,
			c == HealthCheckNVLink && !g.NVLink, c == HealthCheckEFA && g.EFADevices == 0:
			continue
		}
		g.Checks = append(g.Checks, c)
	}
	return g
}

// computeMajor is the major version of a compute capability ("9.0" → 9).
func computeMajor(cc string) int {
	major, _, _ := strings.Cut(cc, ".")
	n, _ := strconv.Atoi(major)
	return n
}

// Describe is the gate's checks as a reviewer reads them.
func (g HealthGateSpec) Describe() string {
	var parts []string
	for _, c := range g.Checks {
		switch c {
		case HealthCheckCUDA:
			parts = append(parts, fmt.Sprintf("CUDA runs within %d s (fabric manager serving)", g.WaitSeconds))
		case HealthCheckGPUCount:
			parts = append(parts, fmt.Sprintf("%d GPUs", g.GPUs))
		case HealthCheckGPUModel:
			parts = append(parts, "each a "+g.GPUModel)
		case HealthCheckFabric:
			parts = append(parts, "NVLink fabric Completed/Success on every GPU")
		case HealthCheckNVLink:
			parts = append(parts, "every GPU pair over NVLink")
		case HealthCheckEFA:
			parts = append(parts, fmt.Sprintf("%d EFA devices in fi_info -p efa (privileged: device access)", g.EFADevices))
		}
	}
	if g.GPUChecksSysAdminBound {
		parts = append(parts, "the GPU checks hold CAP_SYS_ADMIN in their bounding set only, as nobody with no privilege escalation: Bottlerocket's NVIDIA toolkit shows unprivileged containers no GPU")
	}
	return strings.Join(parts, "; ")
}
