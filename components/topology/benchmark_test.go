package topology

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBenchmarkJobsFollowThePool derives every built-in profile's benchmark and checks the MPI
// arithmetic against the pool's own shape: one worker per training pod, one slot per GPU of the
// pod, -np and -N in the command equal to them, and a sweep the GPUs can hold.
func TestBenchmarkJobsFollowThePool(t *testing.T) {
	settings := BenchmarkSettings{Enabled: true, TrainingCommand: []string{"train.py", "--deepspeed", "ds_z3.json"}}
	for _, name := range BuiltinProfileNames() {
		p, _ := BuiltinProfile(name)
		pool, err := Derive("gpu", p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := deriveBenchmark(pool, settings, DefaultTrainingImage)
		pod, it := pool.TrainingPod, pool.Instance
		nodes := pool.Scaling.DesiredNodes
		if pool.Provisioner == ProvisionerKarpenter {
			nodes = pool.Scaling.MaxNodes
		}
		n := b.NCCL
		if b.Nodes != nodes || n.Workers != nodes*pod.PodsPerNode || n.SlotsPerWorker != pod.GPUsPerPod || n.Processes != n.Workers*pod.GPUsPerPod {
			t.Errorf("%s: %d nodes, %d workers × %d slots, -np %d; pool %d nodes × %d pods × %d GPUs", name, b.Nodes, n.Workers, n.SlotsPerWorker, n.Processes,
				nodes, pod.PodsPerNode, pod.GPUsPerPod)
		}
		if got := flag(n.Command, "-np"); got != strconv.Itoa(n.Processes) {
			t.Errorf("%s: mpirun -np %s, want %d", name, got, n.Processes)
		}
		if got := flag(n.Command, "-N"); got != strconv.Itoa(pod.GPUsPerPod) {
			t.Errorf("%s: mpirun -N %s, want %d", name, got, pod.GPUsPerPod)
		}
		// Two buffers of the largest message fit in 80% of one GPU's memory.
		if 2*n.MaxBytes > int64(it.GPUMemoryGiB)<<30*8/10 {
			t.Errorf("%s: -e %d does not fit a %d GiB GPU twice", name, n.MaxBytes, it.GPUMemoryGiB)
		}
		if it.GPUDirectRDMA && it.GPUMemoryGiB >= 40 && (n.MaxBytes != 16<<30 || n.Iterations != 100) {
			t.Errorf("%s: %s with GPUDirect RDMA sweeps to %d × %d, want AWS's 16 GiB × 100", name, it.Name, n.MaxBytes, n.Iterations)
		}
		if got := flag(n.Command, "-e"); got != ncclSizeArg(n.MaxBytes) {
			t.Errorf("%s: -e %s, want %s", name, got, ncclSizeArg(n.MaxBytes))
		}
		// Every rank gets the pool's NCCL environment by name, NCCL_DEBUG=INFO among it.
		for _, e := range pod.Env {
			if !slices.Contains(pairs(n.Command, "-x"), e.Name) {
				t.Errorf("%s: mpirun does not pass %s to the ranks", name, e.Name)
			}
		}
		if !slices.ContainsFunc(n.Env, func(e EnvVar) bool { return e.Name == "NCCL_DEBUG" && e.Value == "INFO" }) {
			t.Errorf("%s: no NCCL_DEBUG=INFO: the doctor could not read the run's log", name)
		}
		if strings.Contains(n.Image, ":latest") || !strings.Contains(n.Image, "ncclv") {
			t.Errorf("%s: image %s is not pinned to a tag naming its versions", name, n.Image)
		}
		if b.DoNotDisrupt != (pool.Provisioner == ProvisionerKarpenter) {
			t.Errorf("%s: do-not-disrupt %v on a %s pool", name, b.DoNotDisrupt, pool.Provisioner)
		}
		tr := b.Train
		if pod.ComputeDomain != nil {
			// An UltraServer pool: its jobs run in the pool's ComputeDomain, queued whole with a
			// quota of one IMEX channel per node and no topology packing (one NVLink domain), and
			// no TrainJob can claim the domain (Trainer v2.3.0); a note says so.
			hasNote := func(sub string) bool {
				return slices.ContainsFunc(b.Notes, func(s string) bool { return strings.Contains(s, sub) })
			}
			if tr != nil || !hasNote("ComputeDomain claim") || b.Queue == nil || b.Queue.Topology != nil ||
				b.Queue.Quota[ResourceIMEXChannel] != fmt.Sprint(b.Nodes*pod.PodsPerNode) {
				t.Errorf("%s: training job %+v, queue %+v, notes %q", name, tr, b.Queue, b.Notes)
			}
			continue
		}
		// torchrun takes nodes, processes and rank from the Trainer's PET_* variables: the
		// command is torchrun and the user's script, nothing derived in between; on an EFA pool
		// between two readings of the node's EFA counters, as the all-reduce's.
		want := append([]string{"torchrun"}, settings.TrainingCommand...)
		if pool.Network.EFAInterfaces > 0 {
			want = append([]string{"bash", "-c", EFACountersTrainingScript(), "record-efa-counters"}, want...)
		}
		if tr == nil || tr.NumNodes != n.Workers || tr.ProcsPerNode != pod.GPUsPerPod || !slices.Equal(tr.Command, want) ||
			tr.EFACounters != (pool.Network.EFAInterfaces > 0) || tr.EFACounters != n.EFACounters {
			t.Errorf("%s: training job %+v, want command %q", name, tr, want)
		}
		withJobs := pool
		withJobs.Benchmark = b
		if withJobs.ReadsEFACounters() != (pool.Network.EFAInterfaces > 0) {
			t.Errorf("%s: the counters reader runs %v on a pool with %d EFA interfaces", name, withJobs.ReadsEFACounters(), pool.Network.EFAInterfaces)
		}
		// Pods holding several GPUs keep the node's IPC namespace, which only a runtime of
		// their own can give; one-GPU pods run on the release's runtime.
		if tr != nil && (pod.HostIPC != (pod.GPUsPerPod > 1) || (tr.Runtime == TrainingRuntimeHostIPC) != pod.HostIPC) {
			t.Errorf("%s: %d GPU(s) per pod, hostIPC %v, runtime %s", name, pod.GPUsPerPod, pod.HostIPC, tr.Runtime)
		}
		checkQueue(t, name, pool, b)
	}
}

// checkQueue: a pool's queue holds what its nodes offer, no more, so that Kueue admits a job
// only when every node it needs is there; and it packs by the network topology exactly where
// nodes exist before the job (managed groups) and carry the labels (types EC2 reports).
func checkQueue(t *testing.T, name string, pool PoolSpec, b *PoolBenchmark) {
	t.Helper()
	q, alloc := b.Queue, NodeAllocatable(pool)
	per := func(r string) int {
		n, _ := strconv.Atoi(strings.TrimRight(alloc[r], "mMi"))
		return n
	}
	want := map[string]string{ResourceGPU: fmt.Sprint(b.Nodes * pool.Instance.GPUCount),
		"cpu": fmt.Sprintf("%dm", b.Nodes*per("cpu")), "memory": fmt.Sprintf("%dMi", b.Nodes*per("memory"))}
	if pool.Network.EFAInterfaces > 0 {
		want[ResourceEFA] = fmt.Sprint(b.Nodes * pool.Network.EFAInterfaces)
	}
	if q == nil || !maps.Equal(q.Quota, want) || q.Name != pool.Name || q.SystemQuota["cpu"] != LauncherCPU {
		t.Fatalf("%s: queue %+v, want quota %v", name, q, want)
	}
	// The NCCL job and the training job each fit the quota whole.
	if gpus := b.NCCL.Workers * pool.TrainingPod.GPUsPerPod; gpus > b.Nodes*pool.Instance.GPUCount {
		t.Errorf("%s: the all-reduce asks for %d GPUs, the queue holds %s", name, gpus, q.Quota[ResourceGPU])
	}
	packs := pool.Provisioner != ProvisionerKarpenter && pool.Instance.NetworkNodeLayers > 0
	if (q.Topology != nil) != packs {
		t.Fatalf("%s: %s pool of %s (%d network layers): topology %+v", name, pool.Provisioner, pool.Instance.Name, pool.Instance.NetworkNodeLayers, q.Topology)
	}
	if tp := q.Topology; tp != nil {
		if len(tp.Levels) != pool.Instance.NetworkNodeLayers+1 || tp.Levels[len(tp.Levels)-1] != LabelHostname || !slices.Contains(tp.Levels, tp.Preferred) ||
			(tp.SliceSize > 0) != (pool.TrainingPod.PodsPerNode > 1) || tp.SliceSize%max(pool.TrainingPod.PodsPerNode, 1) != 0 {
			t.Errorf("%s: topology %+v", name, tp)
		}
	}
}

func TestBenchmarkOffWithoutTheKey(t *testing.T) {
	spec, err := LoadStack("../../stacks/Pulumi.dev.yaml", planDay)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range spec.Pools {
		if p.Benchmark != nil {
			t.Errorf("dev: pool %s has benchmark jobs though the stack does not enable them", p.Name)
		}
	}
	spec, err = LoadStack("../../stacks/Pulumi.p4d-pod-per-gpu.yaml", planDay)
	if err != nil {
		t.Fatal(err)
	}
	b := spec.Pools[0].Benchmark
	if b == nil || b.NCCL.Workers != 4 || b.NCCL.SlotsPerWorker != 1 || b.Train != nil || len(b.Notes) != 3 {
		t.Fatalf("p4d-pod-per-gpu: %+v", b)
	}
}

func TestSizes(t *testing.T) {
	for n, want := range map[int64][2]string{0: {"0", "0 B"}, 1536: {"1536", "1536 B"}, 16 << 30: {"16G", "16 GiB"}, 512 << 20: {"512M", "512 MiB"}, 8: {"8", "8 B"}, 3 << 10: {"3K", "3 KiB"}} {
		if got := [2]string{ncclSizeArg(n), HumanSize(n)}; got != want {
			t.Errorf("%d: %v, want %v", n, got, want)
		}
	}
}

func flag(cmd []string, name string) string {
	if i := slices.Index(cmd, name); i >= 0 && i+1 < len(cmd) {
		return cmd[i+1]
	}
	return ""
}

func flagEq(cmd []string, name string) string {
	for _, a := range cmd {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func pairs(cmd []string, name string) []string {
	var out []string
	for i, a := range cmd {
		if a == name && i+1 < len(cmd) {
			out = append(out, cmd[i+1])
		}
	}
	return out
}

// TestPlannedNodes: a managed node group has exactly its desired size; a Karpenter pool 0 up to
// its GPU limit in nodes, and 0 once the stack expired.
func TestPlannedNodes(t *testing.T) {
	for _, tc := range []struct {
		profile string
		expired bool
		lo, hi  int
	}{
		{"p5-efa", false, 2, 2},
		{"karpenter-p5", false, 0, 4},
		{"karpenter-p5", true, 0, 0},
		{"p5-efa", true, 0, 0},
	} {
		p, _ := BuiltinProfile(tc.profile)
		s, err := Derive(tc.profile, p)
		if err != nil {
			t.Fatal(err)
		}
		if tc.expired {
			s = s.atZero(Finding{})
		}
		if lo, hi := PlannedNodes(s); lo != tc.lo || hi != tc.hi {
			t.Errorf("%s (expired %v): %d-%d nodes, want %d-%d (scaling %+v)", tc.profile, tc.expired, lo, hi, tc.lo, tc.hi, s.Scaling)
		}
	}
}
