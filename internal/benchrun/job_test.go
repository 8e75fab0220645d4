package benchrun

import (
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Each job kind finds its pods, its output pod and its ranks by the labels its controller puts
// on them; a pool without a training command has no training job, and says how to get one.
func TestJobOf(t *testing.T) {
	spec, err := topology.LoadStack("../../stacks/Pulumi.p5-efa.yaml", testDay)
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Pools[0]
	j, err := jobOf(spec, p, JobNCCL)
	if err != nil {
		t.Fatal(err)
	}
	if j.kind != "mpijob" || j.name != p.Benchmark.NCCL.Name || j.namespace != topology.BenchmarkNamespace ||
		j.output != mpiJobLabel+"="+j.name+","+mpiRoleLabel+"=launcher" || j.ranks != mpiJobLabel+"="+j.name+","+mpiRoleLabel+"=worker" ||
		strings.Join(j.suspend, ".") != "spec.runPolicy.suspend" {
		t.Errorf("the all-reduce: %+v", j)
	}
	if _, err := jobOf(spec, p, JobTrain); err == nil || !strings.Contains(err.Error(), "trainingCommand") {
		t.Errorf("a training job without a training command: %v", err)
	}
	if _, err := jobOf(spec, p, "sendrecv"); err == nil {
		t.Error("an unknown job kind was accepted")
	}
	p.Benchmark = nil
	if _, err := jobOf(spec, p, JobNCCL); err == nil || !strings.Contains(err.Error(), "benchmarks") {
		t.Errorf("a pool without benchmarks: %v", err)
	}
}

func TestClock(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0:00", 61 * time.Second: "1:01", 3723 * time.Second: "1:02:03", 1499 * time.Millisecond: "0:01"} {
		if got := clock(d); got != want {
			t.Errorf("clock(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestMatches(t *testing.T) {
	pod := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1", "b": "2"}}}
	if !matches(pod, "a=1,b=2") || matches(pod, "a=1,b=3") || matches(pod, "c=1") {
		t.Error("label selector matching")
	}
}
