package topology

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// Figures worked by hand from EKS's formulas (allocatable.go).
func TestTrainingPodCPUMemoryByHand(t *testing.T) {
	checkSizes(t, ProvisionerManagedNodeGroup, []sizeCase{
		// 192 vCPU: reserved 60+10+10+188×2.5 = 550m, DaemonSets 1000m: 190.45 → 190 cores.
		// 2048 GiB × 0.95 = 1,992,294 MiB − (255 + 11×250 + 100 + 2048) MiB → 1940 GiB.
		{"p5.48xlarge", 1, "190", "1940Gi"},
		// 4 vCPU: 4000 − 80 − 1000 = 2920m → 2 cores. 32 GiB × 0.95 − (255 + 11×110 + 100 + 2048) MiB → 26 GiB.
		{"g6e.xlarge", 1, "2", "26Gi"},
		// 96 vCPU, 4 pods: (96000 − 290 − 1000)/1000 = 94 cores → 23 each; 1152 GiB → 1089 GiB → 272 each.
		{"p4d.24xlarge", 4, "23", "272Gi"},
	})
}

type sizeCase struct {
	typ         string
	pods        int
	cpu, memory string
}

// checkSizes compares each type's training pods on a pool of the provisioner with the case.
func checkSizes(t *testing.T, prov Provisioner, cases []sizeCase) {
	t.Helper()
	for _, c := range cases {
		it, _ := catalog.Lookup(c.typ)
		cpu, memory := trainingPodCPUMemory(it, c.pods, prov)
		if cpu.String() != c.cpu || memory.String() != c.memory {
			t.Errorf("%s %s, %d pods: cpu %s memory %s, want %s %s", prov, c.typ, c.pods, cpu.String(), memory.String(), c.cpu, c.memory)
		}
	}
}

// On a Karpenter pool the memory is what Karpenter expects of a type it has not launched yet,
// worked by hand from karpenter-provider-aws v1.15.2 (allocatable.go).
func TestKarpenterPoolsFitKarpentersEstimate(t *testing.T) {
	checkSizes(t, ProvisionerKarpenter, []sizeCase{
		// 2,097,152 MiB − ⌈7.5%⌉ 157,287 = 1,939,865; 2 ENIs × 49 + 2 = 100 pods: − (255 + 1,100 + 100)
		// = 1,938,410; − 2,048 for the DaemonSets = 1,936,362 MiB → 1890 GiB (the managed pool: 1940).
		{"p5.48xlarge", 1, "190", "1890Gi"},
		// 1,179,648 − 88,474 = 1,091,174; 15 × 49 + 2 = 737 pods: − (255 + 8,107 + 100) = 1,082,712;
		// − 2,048 = 1,080,664 MiB → 1055 GiB, and 263 GiB each of 4.
		{"p4d.24xlarge", 1, "94", "1055Gi"},
		{"p4d.24xlarge", 4, "23", "263Gi"},
	})
}

// Karpenter's estimate of a type's allocatable memory, to the MiB, worked by hand.
func TestKarpenterLaunchMemoryByHand(t *testing.T) {
	for typ, want := range map[string]float64{
		"p5.48xlarge":  1_938_410, // 2,097,152 − 157,287 − (255 + 11 × (2 × 49 + 2) + 100)
		"p4d.24xlarge": 1_082_712, // 1,179,648 − 88,474 − (255 + 11 × (15 × 49 + 2) + 100)
		// arm64: 983,040 − 64 = 982,976, − ⌈73,723.2⌉; no IPv4 count in the catalog: 250 pods.
		"p6e-gb200.36xlarge": 906_147, // 982,976 − 73,724 − (255 + 2,750 + 100)
	} {
		it, _ := catalog.Lookup(typ)
		if got := karpenterLaunchMemoryMiB(it); got != want {
			t.Errorf("%s: Karpenter expects %.0f MiB, want %.0f", typ, got, want)
		}
	}
}

// A real EKS AL2023 p4d.24xlarge (kubectl describe node of a Karpenter node in
// gnosia93/training-on-eks, chapter/c8-scheduling-evit.md: allocatable cpu 95690m, memory
// 1167634920Ki, pods 737) holds the training pods of a p4d pool of either provisioner, in
// either layout.
func TestARealP4dNodeHoldsItsPoolsPods(t *testing.T) {
	real := map[string]string{"cpu": "95690m", "memory": "1167634920Ki", "pods": "737"}
	for _, prov := range []Provisioner{ProvisionerManagedNodeGroup, ProvisionerKarpenter} {
		for _, profile := range []string{"p4d-efa", "p4d-pod-per-gpu"} {
			p, _ := BuiltinProfile(profile)
			p.Provisioner = prov
			if prov == ProvisionerKarpenter {
				p.Placement, p.MinNodes = PlacementNone, 0
			}
			spec, err := Derive("gpu", p)
			if err != nil {
				t.Fatalf("%s on %s: %v", profile, prov, err)
			}
			if why := TrainingPodsUnfit(spec, real); why != "" {
				t.Errorf("%s on %s: %s", profile, prov, why)
			}
		}
	}
}

// On every type and pod count, the pods fit in what the kubelet leaves them, with room for the
// DaemonSets, and each gets at least a core and a GiB.
func TestTrainingPodsFitTheirNode(t *testing.T) {
	for _, it := range catalog.All() {
		for pods := 1; pods <= it.GPUCount; pods++ {
			cpu, memory := trainingPodCPUMemory(it, pods, ProvisionerManagedNodeGroup)
			usedCPU := cpu.MilliValue()*int64(pods) + int64(kubeReservedCPUMillis(it.VCPUs)) + daemonSetCPUMillis
			usedMem := memory.Value()*int64(pods) + int64(kubeReservedMemoryBaseMiB+kubeReservedMemoryPerPod*maxPods(it.VCPUs)+evictionHardMiB+daemonSetMemoryMiB)<<20
			if usedCPU > int64(it.VCPUs)*1000 || float64(usedMem) > float64(int64(it.MemoryGiB)<<30)*usableMemoryFraction {
				t.Errorf("%s × %d pods: %s cpu, %s memory each do not fit", it.Name, pods, cpu.String(), memory.String())
			}
			if cpu.Cmp(resource.MustParse("1")) < 0 || memory.Cmp(resource.MustParse("1Gi")) < 0 {
				t.Errorf("%s × %d pods: %s cpu, %s memory", it.Name, pods, cpu.String(), memory.String())
			}
		}
	}
}

// A node that reports NodeAllocatable holds its pool's training pods, on every pool of every
// stack; one that keeps back a MiB of memory or a millicore more than its pods need does not,
// and the reason names the resource.
func TestTrainingPodsUnfit(t *testing.T) {
	files, _ := filepath.Glob("../../stacks/Pulumi.*.yaml")
	for _, f := range files {
		spec, err := LoadStack(f, planDay)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range spec.Pools {
			if why := TrainingPodsUnfit(p, NodeAllocatable(p)); why != "" {
				t.Errorf("%s pool %s: a node as planned: %s", spec.Stack, p.Name, why)
			}
			for _, r := range []struct{ name, each string }{{"cpu", p.TrainingPod.CPU}, {"memory", p.TrainingPod.Memory}} {
				need := resource.MustParse(r.each)
				need.Mul(int64(p.TrainingPod.PodsPerNode))
				short := need.DeepCopy()
				short.Sub(resource.MustParse(map[string]string{"cpu": "1m", "memory": "1Mi"}[r.name]))
				alloc := NodeAllocatable(p)
				alloc[r.name] = short.String()
				if why := TrainingPodsUnfit(p, alloc); !strings.Contains(why, "allocatable "+r.name+" is "+short.String()) {
					t.Errorf("%s pool %s: %s %s, just short of %s: %q", spec.Stack, p.Name, r.name, short.String(), need.String(), why)
				}
				alloc[r.name] = need.String()
				if why := TrainingPodsUnfit(p, alloc); why != "" {
					t.Errorf("%s pool %s: %s exactly what the pods request: %q", spec.Stack, p.Name, r.name, why)
				}
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no stack files")
	}
}
