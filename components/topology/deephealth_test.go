package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// TestNVLinksPerGPU: the links the diagnostics expect up are NVIDIA's per-GPU counts: 12 on
// A100 (AWS's own p4de parameter), 18 on H100, H200 and B200-class GPUs; none without NVLink.
func TestNVLinksPerGPU(t *testing.T) {
	want := map[int]int{3: 12, 4: 18, 5: 18}
	for _, it := range catalog.All() {
		got := nvlinksPerGPU(it)
		if it.NVLinkGBps == 0 && got != 0 || it.NVLinkGBps > 0 && got != want[it.NVLinkGeneration] {
			t.Errorf("%s (NVLink %d, %d GB/s): %d links per GPU", it.Name, it.NVLinkGeneration, it.NVLinkGBps, got)
		}
	}
}

// TestDiagCommand: every built-in profile's command expects its GPUs, its links where it has
// NVLink, bounds dcgmi, and prints the exit-code line after it.
func TestDiagCommand(t *testing.T) {
	for _, name := range BuiltinProfileNames() {
		p, _ := BuiltinProfile(name)
		s, err := Derive(name, p)
		if err != nil {
			t.Fatal(err)
		}
		for level := DiagLevelMin; level <= DiagLevelMax; level++ {
			cmd := DiagCommand(s, level)
			line := strings.Join(cmd, " ")
			if cmd[0] != "sh" || !strings.Contains(cmd[2], DiagExitMarker) || !slices.Contains(cmd, "gpu:"+fmt.Sprint(s.Instance.GPUCount)) ||
				!strings.Contains(line, "-t "+fmt.Sprint(diagTimeoutSeconds[level])) || strings.Contains(line, "nvlinks_expected_up") != (s.Instance.NVLinkGBps > 0) {
				t.Errorf("%s level %d: %s", name, level, line)
			}
			if d := HealthCheckDeadlineSeconds(HealthCheckDiag, level, s); d <= diagTimeoutSeconds[level] {
				t.Errorf("%s level %d: the job's deadline %d s ends before dcgmi's own %d s", name, level, d, diagTimeoutSeconds[level])
			}
		}
	}
}

// TestPublishedPairsPassTheFloor: every published two-node figure clears the pair floor of its
// type's EFA profile by a wide margin: the floor finds broken pairs, not slow ones.
func TestPublishedPairsPassTheFloor(t *testing.T) {
	for _, name := range BuiltinProfileNames() {
		p, _ := BuiltinProfile(name)
		s, err := Derive(name, p)
		if err != nil || s.Network.EFAInterfaces == 0 {
			continue
		}
		floor, _ := PairBusBWFloor(s)
		for _, ref := range catalog.BusBWReferences(s.Instance.Name, 2) {
			if ref.BusBW < 2*floor {
				t.Errorf("%s: published %.2f GB/s at %d B is under twice the floor %.0f GB/s", name, ref.BusBW, ref.Bytes, floor)
			}
		}
	}
}

// TestPairNCCLJob: the pair runs the pool's own job with two nodes' workers, its command
// derived again (not the whole pool's -np).
func TestPairNCCLJob(t *testing.T) {
	spec, err := LoadStack("../../stacks/Pulumi.p4d-pod-per-gpu.yaml", planDay)
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Pools[0]
	j := PairNCCLJob(p, "pair")
	np := 2 * p.TrainingPod.PodsPerNode * p.TrainingPod.GPUsPerPod
	if j == nil || j.Workers != 2*p.TrainingPod.PodsPerNode || j.Processes != np || !slices.Contains(j.Command, fmt.Sprint(np)) ||
		np == p.Benchmark.NCCL.Processes || slices.Contains(j.Command, fmt.Sprint(p.Benchmark.NCCL.Processes)) {
		t.Errorf("pair job %+v", j)
	}
	p.Benchmark = nil
	if PairNCCLJob(p, "pair") != nil {
		t.Error("a pool without benchmarks has a pair job")
	}
}
