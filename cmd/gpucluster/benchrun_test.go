package main

import (
	"slices"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// TestBenchRunWeighsEveryErrorOfThePoolOrTheCluster: bench run refuses on verify's errors about
// its pool and about the whole cluster (a CRD not served, as when Kueue is not installed: no pool
// named), one of them being enough; another pool's errors and any warning do not stop it.
func TestBenchRunWeighsEveryErrorOfThePoolOrTheCluster(t *testing.T) {
	r := verify.Report{Findings: []verify.Finding{
		{Severity: topology.SeverityError, Code: verify.CodeNotInstalled, Object: "clusterqueues.kueue.x-k8s.io"},
		{Severity: topology.SeverityError, Code: verify.CodeAgentMissing, Pool: "gpu", Node: "gpu-1"},
		{Severity: topology.SeverityError, Code: verify.CodeNodeCount, Pool: "other"},
		{Severity: topology.SeverityWarning, Code: verify.CodeUnknownPool, Pool: "old", Node: "stray"},
		{Severity: topology.SeverityWarning, Code: verify.CodeStartupTaint, Pool: "gpu", Node: "gpu-0"},
	}}
	var got []string
	for _, f := range poolErrors(r, "gpu") {
		got = append(got, f.Code)
	}
	if want := []string{verify.CodeNotInstalled, verify.CodeAgentMissing}; !slices.Equal(got, want) {
		t.Errorf("errors weighed for pool gpu: %v, want %v", got, want)
	}
	// The cluster-wide error alone is enough.
	if got := poolErrors(verify.Report{Findings: r.Findings[:1]}, "gpu"); len(got) != 1 {
		t.Errorf("a CRD not served: %v", got)
	}
}
