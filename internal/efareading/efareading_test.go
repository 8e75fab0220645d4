package efareading

import (
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// TestPodsOfOneNodeInAnyOrder: two training pods on one node (one GPU per pod) each read the
// node's device before and after the run, and their logs are read in either order: the
// traffic is from the earlier reading before (the smaller count) to the later after (the
// larger), the span of the whole run, not of whichever log came first.
func TestPodsOfOneNodeInAnyOrder(t *testing.T) {
	line := func(phase string, tx uint64) string {
		return topology.EFACounterLine(phase, "node-a", "rdmap79s0", map[string]uint64{topology.EFATxBytes: tx, topology.EFARxBytes: tx})
	}
	// Pod 0 started first and ended first; pod 1 read a little later each time.
	pod0 := line(topology.EFAPhaseBefore, 1000) + "\n" + line(topology.EFAPhaseAfter, 900_000) + "\n"
	pod1 := line(topology.EFAPhaseBefore, 1500) + "\n" + line(topology.EFAPhaseAfter, 901_000) + "\n"
	for name, log := range map[string]string{"pod 0 first": pod0 + pod1, "pod 1 first": pod1 + pod0} {
		e, err := Parse(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		tr := e.Traffic()
		if len(tr.Nodes) != 1 || tr.TxBytes != 900_000 || tr.RxBytes != 900_000 || len(tr.Problems) > 0 {
			t.Errorf("%s: traffic %+v, want 900000 bytes each way (1000 → 901000)", name, tr)
		}
	}
}
