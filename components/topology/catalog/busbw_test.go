package catalog

import "testing"

// Every published figure is for a type the catalog knows, at a real node count and size,
// with a source, and is found by the lookup the report uses.
func TestBusBWReferences(t *testing.T) {
	for _, r := range busBWReferences {
		if _, ok := Lookup(r.InstanceType); !ok {
			t.Errorf("%s: not in the catalog", r.InstanceType)
		}
		if r.Nodes < 2 || r.Bytes <= 0 || r.BusBW <= 0 || r.Source == "" {
			t.Errorf("incomplete reference %+v", r)
		}
		found := false
		for _, g := range BusBWReferences(r.InstanceType, r.Nodes) {
			found = found || g == r
		}
		if !found {
			t.Errorf("%+v not returned by BusBWReferences", r)
		}
	}
	if got := BusBWReferences("p4d.24xlarge", 2); len(got) != 0 {
		t.Errorf("p4d.24xlarge has no published figure of its own, got %+v", got)
	}
}
