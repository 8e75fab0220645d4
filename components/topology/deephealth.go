package topology

import (
	"fmt"
	"slices"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// The checks `gpucluster health` runs on demand on a node no job holds, after its health gate
// passed: deeper than the gate (which only looks), each makes the hardware work. A failed one
// is the value LabelHealthFailed takes, as a gate's check is, so verify and bench run read it
// the same way; the node gets HealthTaint back, as SageMaker HyperPod's deep health checks
// take a node out of service (HyperPod "Resilience": deep health checks, DCGM diagnostics
// level 2, NCCL tests).
const (
	// HealthCheckDiag: NVIDIA DCGM's diagnostics (dcgmi diag) at the level asked for.
	HealthCheckDiag = "dcgm-diag"
	// HealthCheckNodeAllReduce: all_reduce_perf over every GPU of the node, in one process.
	HealthCheckNodeAllReduce = "node-allreduce"
	// HealthCheckPairAllReduce: the pool's all-reduce MPIJob over two nodes (EFA pools).
	HealthCheckPairAllReduce = "pair-allreduce"
)

// DeepHealthChecks are the on-demand checks, in the order they run: a node goes on to the next
// only when the previous passed.
var DeepHealthChecks = []string{HealthCheckDiag, HealthCheckNodeAllReduce, HealthCheckPairAllReduce}

// IsDeepHealthCheck says whether a health-failed label's value is an on-demand check's (a later
// `gpucluster health` may check the node again and, if it passes, return it to service) rather
// than the gate's (the gate alone decides those).
func IsDeepHealthCheck(name string) bool { return slices.Contains(DeepHealthChecks, name) }

// LabelHealthRun is the run's id: an annotation on a node while `gpucluster health` checks it, and
// a label on every object the run creates. With it a node's HealthTaint is the run's, not the
// gate's: a run that could not finish (killed) leaves a node the next run recognizes as its own
// to check and give back.
const LabelHealthRun = labelDomain + "health-run"

// LabelHealthCheck names the check a health run's object runs (one of DeepHealthChecks).
const LabelHealthCheck = labelDomain + "health-check"

// HealthJobKeepSeconds: a health job that outlives its run (the command killed) is deleted by
// the TTL controller this long after it finished.
const HealthJobKeepSeconds = 3600

// HealthComponent is the name `gpucluster health` records its events under.
const HealthComponent = "gpucluster-health"

// DCGM diagnostic levels dcgmi diag -r takes (DCGM user guide, "Run Levels"): 1 quick (seconds),
// 2 medium (about two minutes), 3 long (tens of minutes), 4 extended (an hour or more).
const (
	DiagLevelMin     = 1
	DiagLevelMax     = 4
	DefaultDiagLevel = 2
)

// DCGMImage is NVIDIA's DCGM image, whose dcgmi runs the diagnostics: the tag the NVIDIA GPU
// Operator ships (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml, July 2026; the
// ubuntu22.04 line ends at 4.5.2). Its entrypoint is nv-hostengine, so the job names its own
// command; dcgmi starts an engine of its own in the pod when none answers on localhost:5555
// (NVIDIA/DCGM v4.6.0 dcgmi/Diag.cpp, StartDiag::DoExecuteConnectionFailure), and the pod has no
// host network, so it never reaches another engine on the node by accident.
const DCGMImage = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"

// DiagPrivileged: the diagnostics' container runs privileged, as every diagnostics pod found
// does (NVIDIA GPU Operator's nvidia-dcgm, Google's cluster-health-scanner): no narrower grant the
// diagnostics are known to work with is documented. Its pod holds every GPU of the node, so no
// other pod shares them meanwhile.
const DiagPrivileged = true

// DiagExitMarker starts the line the diagnostics' job prints after dcgmi, with its exit code:
// the JSON alone does not say whether the run itself completed (NVIDIA/DCGM v4.6.0
// dcgmi/Diag.cpp GetFailureResult: 0 clean, 226 errors, 205 an error that isolates the GPU,
// anything else a diagnostic that did not run: 242 no data, 245 timed out, 203 killed).
const DiagExitMarker = "gpucluster: dcgmi exit code "

// diagTimeoutSeconds bounds dcgmi itself (-t), inside the job's own deadline: level 2 has been
// seen to hang on B200 and GB200 in a Kubernetes job (NVIDIA/DCGM#247). Levels 1 to 4 take
// seconds, about 2 minutes, about 15 minutes and over an hour (dcgmi-diag reference); AWS's
// health checks give level 2 900 s and level 4 9,000 s (awsome-distributed-training
// 4.validation_and_observability/2.gpu-cluster-healthcheck, checks/1-dcgm-diag-l2.sh and
// checks/4-dcgm-diag-l4.sh).
var diagTimeoutSeconds = map[int]int{1: 300, 2: 900, 3: 3600, 4: 9000}

// DiagCommand is the diagnostics' command on one of the pool's nodes: dcgmi diag at the level,
// in JSON (the table is for people, and its layout changed from DCGM 3 to 4), expecting every
// GPU of the type, and on NVSwitch types every NVLink of each GPU up: without that parameter
// level 2 does not fail a node whose links are down (NVIDIA/DCGM#198; AWS passes
// pcie.gpu_nvlinks_expected_up=12 on p4de, awsome-distributed-training
// 1.architectures/efa-cheatsheet.md). Then the marker line with dcgmi's exit code, which is
// the job's.
func DiagCommand(p PoolSpec, level int) []string {
	args := []string{"dcgmi", "diag", "-r", fmt.Sprint(level), "-j", "-t", fmt.Sprint(diagTimeoutSeconds[level]),
		"--expectedNumEntities", fmt.Sprintf("gpu:%d", p.Instance.GPUCount)}
	if links := nvlinksPerGPU(p.Instance); links > 0 {
		args = append(args, "-p", fmt.Sprintf("pcie.gpu_nvlinks_expected_up=%d", links))
	}
	return append([]string{"sh", "-c", `"$@"; rc=$?; echo "` + DiagExitMarker + `$rc"; exit $rc`, HealthCheckDiag}, args...)
}

// nvlinkGBpsPerLink is one NVLink's bandwidth, both directions, by generation: 50 GB/s for
// NVLink 3 and 4, 100 GB/s for NVLink 5 (NVIDIA's A100, H100 and Blackwell architecture
// documents: 12 links and 600 GB/s per A100, 18 links and 900 GB/s per H100, 18 links and
// 1.8 TB/s per B200).
var nvlinkGBpsPerLink = map[int]int{3: 50, 4: 50, 5: 100}

// nvlinksPerGPU is how many NVLinks each GPU of the type has: its NVLink bandwidth over one
// link's; 0 without NVLink.
func nvlinksPerGPU(it catalog.InstanceType) int {
	per := nvlinkGBpsPerLink[it.NVLinkGeneration]
	if per == 0 || it.NVLinkGBps == 0 {
		return 0
	}
	return it.NVLinkGBps / per
}

// HealthCheckDeadlineSeconds bounds a check's job, from its creation: the image pull (the
// training image is about 10 GB) and the check itself.
func HealthCheckDeadlineSeconds(check string, level int, p PoolSpec) int {
	const pull = 900
	switch check {
	case HealthCheckDiag:
		return pull + diagTimeoutSeconds[level] + 60
	case HealthCheckNodeAllReduce:
		return pull + 900
	}
	return ncclDeadlineSeconds
}

// NodeAllReduceCommand is the single-node check: all_reduce_perf in one process driving every
// GPU of the node (-g), so that every byte moves between the node's GPUs and none over the
// network; mpirun starts the one process because AWS's image builds nccl-tests with MPI. The
// sweep ends where the pool's benchmark ends.
func NodeAllReduceCommand(p PoolSpec) []string {
	maxBytes, iters, _ := ncclSweep(p.Instance)
	return []string{"mpirun", "--allow-run-as-root", "--tag-output", "-np", "1", "--bind-to", "none",
		NCCLTestsBinary, "-b", "8", "-e", ncclSizeArg(maxBytes), "-f", "2", "-g", fmt.Sprint(p.Instance.GPUCount), "-c", "1", "-n", fmt.Sprint(iters)}
}

// NodeBusBWFloor is the out-of-place busbw (GB/s) the single-node all-reduce must reach at its
// largest message, and why; 0 when the node's GPUs have no NVLink to hold them to. It is a floor
// for a broken node, not a performance reference: half of what one GPU can send over NVLink in
// one direction (the catalog's per-GPU figure is both directions). busbw is normalized so that
// it compares with the bandwidth of the slowest link (nccl-tests doc/PERFORMANCE.md, "Bus
// bandwidth"), and a healthy NVSwitch node reaches most of it; a node whose GPUs lost NVLink
// moves its traffic over PCIe and host memory at a tenth of it (NVIDIA/nccl-tests#178: 208 GB/s
// among A100s over NVLink, 20 GB/s once off it).
func NodeBusBWFloor(p PoolSpec) (float64, string) {
	it := p.Instance
	if it.NVLinkGBps == 0 {
		return 0, fmt.Sprintf("%s's GPUs have no NVLink: busbw is reported, not judged", it.Name)
	}
	floor := float64(it.NVLinkGBps) / 2 / 2
	return floor, fmt.Sprintf("half of the %d GB/s one %s sends over NVLink in one direction: a node whose GPUs lost NVLink moves its traffic over PCIe at a tenth of it", it.NVLinkGBps/2, it.GPUModel)
}

// PairBusBWShare is the share of the pool's link capacity (NCCLExpectation.ExpectedInterNodeGbps,
// in GB/s) a pair's all-reduce busbw must reach at its largest message. The published two-node
// figures reach more than the capacity itself (catalog: 487 GB/s on 2 x p5.48xlarge, 3,200 Gbps;
// 78 GB/s on 2 x p4de.24xlarge, 400 Gbps), because NCCL keeps part of each node's traffic on
// NVLink; a pair whose traffic left EFA for the ENA sockets reaches a few GB/s.
const PairBusBWShare = 0.5

// PairBusBWFloor is the busbw (GB/s) a pair of the pool's nodes must reach, and why.
func PairBusBWFloor(p PoolSpec) (float64, string) {
	capacity := p.NCCL.ExpectedInterNodeGbps / 8
	return capacity * PairBusBWShare, fmt.Sprintf("%.0f%% of the %g Gbps (%.0f GB/s) the pool's EFA interfaces carry per node: healthy pairs pass it with room, traffic off EFA falls far below",
		100*PairBusBWShare, p.NCCL.ExpectedInterNodeGbps, capacity)
}

// PairNCCLJob is the pool's all-reduce job over two nodes, named name: the benchmark's shape
// (the same pods, environment and EFA counters), only fewer workers. Nil when the pool has no
// benchmark job, which the MPI operator that runs it comes with.
func PairNCCLJob(p PoolSpec, name string) *NCCLTestJob {
	if p.Benchmark == nil {
		return nil
	}
	j := p.Benchmark.NCCL
	j.Name = name
	j.Workers = 2 * p.TrainingPod.PodsPerNode
	j.Processes = j.Workers * j.SlotsPerWorker
	j.Command = ncclJobCommand(j)
	return &j
}
