package topology

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// Figures worked by hand from EKS's formulas (allocatable.go).
func TestTrainingPodCPUMemoryByHand(t *testing.T) {
	cases := []struct {
		typ         string
		pods        int
		cpu, memory string
	}{
		// 192 vCPU: reserved 60+10+10+188×2.5 = 550m, DaemonSets 1000m: 190.45 → 190 cores.
		// 2048 GiB × 0.95 = 1,992,294 MiB − (255 + 11×250 + 100 + 2048) MiB → 1940 GiB.
		{"p5.48xlarge", 1, "190", "1940Gi"},
		// 4 vCPU: 4000 − 80 − 1000 = 2920m → 2 cores. 32 GiB × 0.95 − (255 + 11×110 + 100 + 2048) MiB → 26 GiB.
		{"g6e.xlarge", 1, "2", "26Gi"},
		// 96 vCPU, 4 pods: (96000 − 290 − 1000)/1000 = 94 cores → 23 each; 1152 GiB → 1089 GiB → 272 each.
		{"p4d.24xlarge", 4, "23", "272Gi"},
	}
	for _, c := range cases {
		it, _ := catalog.Lookup(c.typ)
		cpu, memory := trainingPodCPUMemory(it, c.pods)
		if cpu.String() != c.cpu || memory.String() != c.memory {
			t.Errorf("%s, %d pods: cpu %s memory %s, want %s %s", c.typ, c.pods, cpu.String(), memory.String(), c.cpu, c.memory)
		}
	}
}

// On every type and pod count, the pods fit in what the kubelet leaves them, with room for the
// DaemonSets, and each gets at least a core and a GiB.
func TestTrainingPodsFitTheirNode(t *testing.T) {
	for _, it := range catalog.All() {
		for pods := 1; pods <= it.GPUCount; pods++ {
			cpu, memory := trainingPodCPUMemory(it, pods)
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
