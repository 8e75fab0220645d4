package program

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// longestNames is a stack with the longest cluster name (38) and pool names (24) the validator
// accepts, and every kind of pool and option that adds a named AWS resource.
var longestNames = `config:
  aws:region: ap-southeast-1
  gpucluster:clusterName: ` + strings.Repeat("c", 38) + `
  gpucluster:expiresAt: "2026-12-01T18:00:00Z"
  gpucluster:flowLogs: {enabled: true}
  gpucluster:benchmarks: {enabled: true}
  gpucluster:pools:
    - {name: ` + strings.Repeat("m", 24) + `, profile: p5-efa, nodes: 2}
    - {name: ` + strings.Repeat("k", 24) + `, profile: karpenter-p5}
`

// TestEveryAWSNameFitsItsLimit: every AWS name the program generates, or Pulumi generates from a
// logical name, fits the API's limit (topology.AWSNameLimits) for the longest accepted names.
// Found by this test: the expiry schedule "<cluster>-<pool>-expiry" reached 70 characters
// (Scheduler: 64), and Karpenter's event rules, auto-named from their logical names, 78 (64).
func TestEveryAWSNameFitsItsLimit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.names.yaml")
	if err := os.WriteFile(file, []byte(longestNames), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := evaluate(t, file)
	checked := map[string]int{}
	for _, r := range ev.res {
		limit, ok := topology.AWSNameLimits[r.Type]
		if !ok {
			continue
		}
		checked[r.Type]++
		name, _ := r.Input(limit.Input).(string)
		switch {
		case name != "" && len(name) > limit.Max:
			t.Errorf("%s %s: %s %q is %d characters, the limit is %d (%s)", r.Type, r.Name, limit.Input, name, len(name), limit.Max, limit.Source)
		case name == "" && !limit.AutoNamed:
			t.Errorf("%s %s has no %s, and Pulumi does not name it", r.Type, r.Name, limit.Input)
		case name == "" && len(r.Name)+len("-1234567") > limit.Max:
			t.Errorf("%s %s: Pulumi would name it %q plus 8 characters, over the limit of %d (%s)", r.Type, r.Name, r.Name, limit.Max, limit.Source)
		}
	}
	for typ := range topology.AWSNameLimits {
		if checked[typ] == 0 {
			t.Errorf("the stack creates no %s: the test no longer covers its limit", typ)
		}
	}
}
