package topology

import (
	"fmt"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// KeyBenchmarks enables the benchmark jobs of a stack: {enabled, trainingCommand}.
const KeyBenchmarks = ConfigNamespace + ":benchmarks"

// BenchmarkNamespace is where the benchmark and training jobs run (kubectl apply's default), and
// the one namespace the MPI operator watches.
const BenchmarkNamespace = "default"

// BenchmarkSettings are the stack's benchmark settings.
type BenchmarkSettings struct {
	// Enabled installs the MPI operator and derives each pool's benchmark jobs.
	Enabled bool `json:"enabled"`
	// TrainingCommand is the training script and its arguments, run by torchrun after the
	// arguments gpucluster derives (nodes, processes per node, rendezvous); empty: no training job.
	TrainingCommand []string `json:"trainingCommand,omitempty"`
}

// PoolBenchmark is what a pool's benchmark jobs run, derived from its spec.
type PoolBenchmark struct {
	// Nodes the jobs span: a managed node group's desired size (it has no autoscaler), a
	// Karpenter pool's maximum (Karpenter launches what the pending pods ask for).
	Nodes int          `json:"nodes"`
	NCCL  NCCLTestJob  `json:"ncclTest"`
	Train *TrainingJob `json:"training,omitempty"`
	// Queue is the Kueue queue the jobs wait in and are admitted from, whole.
	Queue *JobQueue `json:"queue"`
	// DoNotDisrupt: Karpenter must not consolidate or replace a node while a job runs on it.
	DoNotDisrupt bool `json:"doNotDisrupt"`
	// Notes say what a reader of the results must know about this pool's runs.
	Notes []string `json:"notes,omitempty"`
}

// NCCLTestJob is nccl-tests' all_reduce_perf across the pool, in the MPIJob shape AWS documents
// for EKS: a launcher running mpirun, and one worker per training pod (per node, or per GPU in
// the pod-per-GPU layout), each requesting the pod's GPUs and EFA devices.
type NCCLTestJob struct {
	Name           string `json:"name"`
	Image          string `json:"image"`
	Workers        int    `json:"workers"`
	SlotsPerWorker int    `json:"slotsPerWorker"`
	Processes      int    `json:"processes"`
	// MaxBytes is the largest message of the sweep, Iterations the timed iterations per size.
	MaxBytes   int64  `json:"maxBytes"`
	Iterations int    `json:"iterations"`
	SizeReason string `json:"sizeReason"`
	// Env goes to every rank (mpirun -x): only what aws-ofi-nccl does not set, and NCCL_DEBUG=INFO
	// so that `gpucluster doctor` and `bench report` read the transports from the same log.
	Env     []EnvVar `json:"env"`
	Command []string `json:"command"`
	// DeadlineSeconds bounds the whole run, node start and image pull included;
	// KeepFinishedSeconds keeps the launcher (and its log) after the run, then it is deleted.
	DeadlineSeconds     int `json:"deadlineSeconds"`
	KeepFinishedSeconds int `json:"keepFinishedSeconds"`
	// Retries are the launcher's: mpirun's first ssh to a worker whose sshd has just started can
	// be refused.
	Retries int `json:"retries"`
	// EFACounters: the launcher records every node's EFA counters right before and right after
	// mpirun (EFACountersRequestScript), which bench report holds the run to.
	EFACounters bool `json:"efaCounters"`
}

// TrainingJob is torchrun across the pool as a Kubeflow Trainer TrainJob: one Trainer "node"
// per training pod (a node holding several pods counts each), each running torchrun with the
// pod's GPUs as its processes. The Trainer's torch plugin gives every pod PET_NNODES,
// PET_NPROC_PER_NODE, PET_NODE_RANK and PET_MASTER_ADDR/PORT (pod 0 behind the JobSet's headless
// Service), which torchrun reads: the command names only the script.
type TrainingJob struct {
	Name string `json:"name"`
	// Runtime is the ClusterTrainingRuntime the TrainJob runs on; RuntimeReason says why.
	Runtime       string   `json:"runtime"`
	RuntimeReason string   `json:"runtimeReason"`
	NumNodes      int      `json:"numNodes"`
	ProcsPerNode  int      `json:"procsPerNode"`
	Command       []string `json:"command"`
	// DeadlineSeconds bounds the run from its start (the TrainJob's activeDeadlineSeconds).
	DeadlineSeconds int `json:"deadlineSeconds"`
	// EFACounters: every training pod records its node's EFA counters right before torchrun
	// starts and right after it ends (EFACountersTrainingScript), in its own log; bench run
	// reads every pod's log, and bench report holds the run to them.
	EFACounters bool `json:"efaCounters"`
}

// The ClusterTrainingRuntimes training runs on (Kubeflow Trainer's torch ML policy). A runtime
// patch cannot set hostIPC (v2.3.0's PodSpecPatch has no such field), so the pod shape that
// needs it has a runtime of its own, the upstream one plus hostIPC.
const (
	// TrainingRuntime is the release's torch-distributed runtime (manifests/base/runtimes).
	TrainingRuntime = "torch-distributed"
	// TrainingRuntimeHostIPC is torch-distributed with the pods in the node's IPC namespace.
	TrainingRuntimeHostIPC = "torch-distributed-host-ipc"
)

// Names of the Kubeflow Trainer API that the TrainJob (benchjobs) and the runtimes (the trainer
// component) share.
const (
	TrainerAPIVersion = "trainer.kubeflow.org/v1alpha1"
	// TrainerReplicatedJob and TrainerContainer run torchrun: the names the torch plugin looks
	// for (constants.Node in the release) and the runtime patches target.
	TrainerReplicatedJob = "node"
	TrainerContainer     = "node"
	// TrainerPatchManager owns gpucluster's runtime patch (a patch is keyed by its manager;
	// Kueue writes its own as kueue.x-k8s.io/manager).
	TrainerPatchManager = labelDomain + "topology"
	// TrainingServiceAccount is the training pods' account, in the jobs' namespace: it mounts
	// no token (nothing in a training pod calls the Kubernetes API), which a runtime patch
	// cannot say of the pod itself.
	TrainingServiceAccount = "gpucluster-training"
)

// TrainingRuntimeFor is the runtime a pool's training pods run on, and why.
func TrainingRuntimeFor(pod TrainingPodSpec) (string, string) {
	if pod.HostIPC {
		return TrainingRuntimeHostIPC, fmt.Sprintf("%d GPUs per pod share the node's IPC namespace (hostIPC), which a runtime patch cannot set", pod.GPUsPerPod)
	}
	return TrainingRuntime, "one GPU per pod: the release's runtime as it is, the pod shape through runtime patches"
}

// Benchmark job constants, each with why.
const (
	// NCCLTestsBinary is where AWS's nccl-tests image installs all_reduce_perf.
	NCCLTestsBinary = "/opt/nccl-tests/build/all_reduce_perf"
	// ncclMaxBytes is AWS's sweep end on p4de/p5 (-e 16G): large enough for busbw to plateau.
	ncclMaxBytes = 16 << 30
	// ncclIterations is AWS's -n 100 with GPUDirect RDMA; see ncclSweep for the others.
	ncclIterations       = 100
	ncclIterationsStaged = 20
	ncclMaxBytesStaged   = 4 << 30
	ncclDeadlineSeconds  = 3600  // node launch, a ~10 GB image pull and the sweep
	trainDeadlineSeconds = 86400 // a benchmark training run; the stack's expiry bounds it too
	keepFinishedSeconds  = 3600  // time to run bench report on the launcher's log
	launcherRetries      = 2
)

// BenchmarkNodes is how many nodes a pool's benchmark spans.
func BenchmarkNodes(p PoolSpec) int {
	if p.Provisioner == ProvisionerKarpenter {
		return p.Scaling.MaxNodes
	}
	return p.Scaling.DesiredNodes
}

// PlannedNodes is the node count a pool may have as derived: a managed node group's desired size
// (it runs no autoscaler), 0 up to a Karpenter NodePool's GPU limit in nodes (0 once the stack
// expired or the pool is stopped: atZero).
func PlannedNodes(p PoolSpec) (lo, hi int) {
	if p.Provisioner == ProvisionerKarpenter {
		if p.Instance.GPUCount == 0 {
			return 0, p.Scaling.MaxNodes
		}
		return 0, p.Scaling.GPULimit / p.Instance.GPUCount
	}
	return p.Scaling.DesiredNodes, p.Scaling.DesiredNodes
}

// deriveBenchmark derives a pool's benchmark jobs.
func deriveBenchmark(p PoolSpec, s BenchmarkSettings, image string) *PoolBenchmark {
	pod := p.TrainingPod
	nodes := BenchmarkNodes(p)
	b := &PoolBenchmark{Nodes: nodes, DoNotDisrupt: p.Provisioner == ProvisionerKarpenter}
	b.Queue = deriveQueue(p, nodes)
	workers := nodes * pod.PodsPerNode
	maxBytes, iters, why := ncclSweep(p.Instance)
	b.NCCL = NCCLTestJob{
		Name: p.Name + "-nccl-allreduce", Image: image, Workers: workers, SlotsPerWorker: pod.GPUsPerPod,
		Processes: workers * pod.GPUsPerPod, MaxBytes: maxBytes, Iterations: iters, SizeReason: why,
		Env: pod.Env, DeadlineSeconds: ncclDeadlineSeconds, KeepFinishedSeconds: keepFinishedSeconds, Retries: launcherRetries,
		EFACounters: p.Network.EFAInterfaces > 0,
	}
	b.NCCL.Command = ncclJobCommand(b.NCCL)
	if nodes < 2 {
		b.Notes = append(b.Notes, fmt.Sprintf("the pool runs %d node(s): all-reduce measures only the GPUs inside one node, not the network between nodes", nodes))
	}
	if pod.GPUsPerPod == 1 && pod.PodsPerNode > 1 {
		b.Notes = append(b.Notes, "one GPU per pod: ranks on the same node talk over the network, not NVLink; compare with a pod-per-node pool to see what that costs")
	}
	switch {
	case len(s.TrainingCommand) > 0 && pod.ComputeDomain != nil:
		// A TrainJob's pods get their shape from runtime patches, and v2.3.0's PodSpecPatch has no
		// resourceClaims: its pods could not claim the ComputeDomain's channel.
		b.Notes = append(b.Notes, fmt.Sprintf("no training job: Kubeflow Trainer v2.3.0's runtime patches cannot give its pods the ComputeDomain claim that multi-node NVLink needs on %s; the NCCL job measures the NVLink domain",
			p.Instance.Name))
	case len(s.TrainingCommand) > 0:
		runtime, why := TrainingRuntimeFor(pod)
		b.Train = &TrainingJob{Name: p.Name + "-train", Runtime: runtime, RuntimeReason: why, NumNodes: workers, ProcsPerNode: pod.GPUsPerPod,
			DeadlineSeconds: trainDeadlineSeconds, EFACounters: b.NCCL.EFACounters}
		b.Train.Command = trainingJobCommand(*b.Train, s.TrainingCommand)
	default:
		b.Notes = append(b.Notes, fmt.Sprintf("no training job: set %s.trainingCommand to the script torchrun runs", KeyBenchmarks))
	}
	return b
}

// ncclSweep is the sweep's largest message and iteration count: AWS's 16 GiB and 100 iterations
// with GPUDirect RDMA, where a GPU holds the two buffers of an out-of-place all-reduce in 80% of
// its memory (else the largest power of two that fits). Without GPUDirect RDMA traffic is staged
// through host memory at a few GB/s, where a 16 GiB all-reduce takes tens of seconds: the sweep
// stops at 4 GiB, long after busbw has levelled, with 20 iterations, inside the deadline.
func ncclSweep(it catalog.InstanceType) (int64, int, string) {
	size, iters := int64(ncclMaxBytes), ncclIterations
	why := "AWS's sweep end"
	if !it.GPUDirectRDMA {
		size, iters = ncclMaxBytesStaged, ncclIterationsStaged
		why = it.Name + " stages network traffic through host memory, where large messages take seconds each"
	}
	limit := int64(it.GPUMemoryGiB) << 30 * 8 / 10 / 2
	for size > limit && size > 1<<20 {
		size /= 2
		why = fmt.Sprintf("two buffers of twice the size do not fit in 80%% of a %d GiB %s", it.GPUMemoryGiB, it.GPUModel)
	}
	return size, iters, fmt.Sprintf("up to %s (%s), %d iterations", HumanSize(size), why, iters)
}

// mpirunCommand is the launcher's command. --tag-output prefixes each line with its rank, which
// bench report reads; -N places the pod's GPUs' ranks on each worker; --bind-to none leaves CPU
// placement to NCCL; the TCP byte-transfer layer carries only MPI's own bootstrap. Each rank gets
// the environment by name (mpirun -x): ssh-started ranks do not inherit the worker's.
func mpirunCommand(j NCCLTestJob) []string {
	cmd := []string{"mpirun", "--allow-run-as-root", "--tag-output", "-np", fmt.Sprint(j.Processes), "-N", fmt.Sprint(j.SlotsPerWorker),
		"--bind-to", "none", "--mca", "pml", "^ucx", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_exclude", "lo,docker0,veth_def_agent",
		"-x", "PATH", "-x", "LD_LIBRARY_PATH"}
	for _, e := range j.Env {
		cmd = append(cmd, "-x", e.Name)
	}
	return append(cmd, NCCLTestsBinary, "-b", "8", "-e", ncclSizeArg(j.MaxBytes), "-f", "2", "-g", "1", "-c", "1", "-n", fmt.Sprint(j.Iterations))
}

// ncclJobCommand is the launcher's command: mpirun, within the EFA counters' recording when the
// job records them.
func ncclJobCommand(j NCCLTestJob) []string {
	if !j.EFACounters {
		return mpirunCommand(j)
	}
	return append([]string{"bash", "-c", EFACountersLauncherScript(), "record-efa-counters"}, mpirunCommand(j)...)
}

// trainingJobCommand is the trainer container's command: torchrun and the script, within the
// EFA counters' recording when the job records them. The Trainer's torch plugin passes a
// command that is not torchtune's through as it is (kubeflow/trainer v2.3.0
// pkg/runtime/framework/plugins/torch/torch.go, EnforceMLPolicy), and torchrun reads its PET_*
// settings from the environment, which bash passes on.
func trainingJobCommand(j TrainingJob, script []string) []string {
	cmd := append([]string{"torchrun"}, script...)
	if !j.EFACounters {
		return cmd
	}
	return append([]string{"bash", "-c", EFACountersTrainingScript(), "record-efa-counters"}, cmd...)
}

// ncclSizeArg writes a size as nccl-tests' -b/-e take it (a K, M or G suffix is 2^10, 2^20, 2^30).
func ncclSizeArg(n int64) string {
	for _, u := range []struct {
		shift  int
		suffix string
	}{{30, "G"}, {20, "M"}, {10, "K"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

// HumanSize writes a byte count in the largest binary unit that divides it: 16 GiB, 8 B.
func HumanSize(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && b >= 1024 && b%1024 == 0 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%d %s", b, units[i])
}
