package program

import "testing"

// TestSelfReference: a DIY backend (organization "organization", either layout) reads the bare
// stack name; Pulumi Cloud the fully qualified one.
func TestSelfReference(t *testing.T) {
	for _, c := range []struct{ org, want string }{
		{"organization", "mixed"},
		{"", "mixed"},
		{"acme", "acme/gpucluster/mixed"},
	} {
		if got := selfReference(c.org, "gpucluster", "mixed"); got != c.want {
			t.Errorf("organization %q: %q, want %q", c.org, got, c.want)
		}
	}
}
