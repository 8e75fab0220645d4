package doctor

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/efareading"
)

// Finding codes of the EFA counter blocks.
const (
	// CodeEFAUnused: the EFA devices of a multi-node run sent next to nothing, whatever NCCL
	// printed: the inter-node traffic went over TCP sockets or other devices.
	CodeEFAUnused = "efa-unused"
	// CodeEFAFabricEvents: SRD timed out, rate-limited a connection, or found a peer that did not
	// answer during the run.
	CodeEFAFabricEvents = "efa-fabric-events"
)

// efaFindings are what the nodes' EFA devices say of the run: an error when a multi-node run
// crossed nothing over EFA, a warning for the fabric's events. A reading that cannot be used is
// left to the report's efa.problems: the counters then prove nothing either way.
func efaFindings(t *efareading.Traffic) []Finding {
	var out []Finding
	if t.CrossedNothing() {
		var per []string
		for _, n := range t.Nodes {
			per = append(per, fmt.Sprintf("%s %s", n.Node, efareading.BytesText(n.TxBytes)))
		}
		out = append(out, Finding{Code: CodeEFAUnused, Severity: topology.SeverityError,
			Evidence: fmt.Sprintf("%s phase=before|after: the %d nodes' EFA devices sent %s in all during the run (%s)",
				topology.EFACounterMarker, len(t.Nodes), efareading.BytesText(t.TxBytes), strings.Join(per, ", ")),
			Cause: "the run's inter-node traffic did not cross EFA, whatever NCCL printed: it went over TCP sockets (NET/Socket) or devices the counters do not cover",
			Fix: "check that the pods request " + topology.ResourceEFA + " and that aws-ofi-nccl starts (NCCL_DEBUG=INFO: \"NET/OFI Selected provider is efa\"); " +
				"keep gpucluster:efaFailFast on, so that NCCL fails instead of falling back; `gpucluster verify` names a node without its EFA devices"})
	}
	if w := t.Warnings(); len(w) > 0 {
		out = append(out, Finding{Code: CodeEFAFabricEvents, Severity: topology.SeverityWarning,
			Evidence: strings.Join(w, "; "),
			Cause:    "SRD met trouble on the fabric during the run: its figures are slower than the fabric allows",
			Fix:      "run `gpucluster health` on the nodes named (its pair check finds the node at fault) and measure again; if it recurs on healthy nodes, open an AWS support case with the instance ids"})
	}
	return out
}
