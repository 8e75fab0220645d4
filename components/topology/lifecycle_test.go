package topology

import (
	"testing"
	"time"
)

// TestAtTimeLeavesTheCallersFindingsAlone: the expired spec's findings are its own; a pool whose
// findings slice has room to spare (as an append leaves it) keeps that room untouched, and what
// the caller appends to its own spec never shows in the expired one.
func TestAtTimeLeavesTheCallersFindingsAlone(t *testing.T) {
	findings := make([]Finding, 1, 4)
	findings[0] = Finding{Severity: SeverityInfo, Code: "mine"}
	spec := StackSpec{Expiry: "2026-01-01T00:00:00Z", Pools: []PoolSpec{{Name: "gpu", Findings: findings}}}
	expired := spec.AtTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	if n := len(expired.Pools[0].Findings); n != 2 || expired.Pools[0].Findings[1].Code != FindingExpired {
		t.Fatalf("expired pool's findings %+v; want mine and %s", expired.Pools[0].Findings, FindingExpired)
	}
	if spare := findings[:2][1]; spare != (Finding{}) {
		t.Errorf("AtTime wrote %+v into the caller's findings array", spare)
	}
	spec.Pools[0].Findings = append(spec.Pools[0].Findings, Finding{Code: "later"})
	if got := expired.Pools[0].Findings[1].Code; got != FindingExpired {
		t.Errorf("the caller's append changed the expired spec's finding to %q", got)
	}
}
