package nodepool

import (
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

func derived(t *testing.T, edit func(*topology.Profile)) topology.PoolSpec {
	t.Helper()
	p, _ := topology.BuiltinProfile("p5-efa")
	p.Capacity, p.CapacityReservationID, p.Placement = topology.CapacityCapacityBlock, "cr-0123456789abcdef0", topology.PlacementNone
	edit(&p)
	spec, err := topology.Derive("train", p)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestTemplateDigestChangesExactlyWithTheTemplate: what newLaunchTemplate writes (the reservation,
// the image, a custom image's node labels, the stack's tags) changes the digest; what goes on the
// node group instead (its size, a managed image's labels) does not.
func TestTemplateDigestChangesExactlyWithTheTemplate(t *testing.T) {
	settings := topology.ClusterSettings{Name: "mixed", ServiceCIDR: "172.20.0.0/16"}
	tags := map[string]string{topology.TagCluster: "mixed"}
	digest := func(spec topology.PoolSpec, tags map[string]string) string {
		d, err := TemplateDigest(spec, settings, tags)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest(derived(t, func(*topology.Profile) {}), tags)
	custom := func(p *topology.Profile) { p.AMIFamily, p.AMIID = topology.AMICustom, "ami-0123456789abcdef0" }
	for what, edit := range map[string]func(*topology.Profile){
		"a new reservation":    func(p *topology.Profile) { p.CapacityReservationID = "cr-0fedcba9876543210" },
		"a custom image":       custom,
		"an image family":      func(p *topology.Profile) { p.AMIFamily = topology.AMIBottlerocketNVIDIA },
		"fewer EFA interfaces": func(p *topology.Profile) { p.EFAInterfaces = 8 },
	} {
		if got := digest(derived(t, edit), tags); got == base {
			t.Errorf("%s leaves the template digest as it was", what)
		}
	}
	if digest(derived(t, custom), tags) == digest(derived(t, func(p *topology.Profile) { custom(p); p.Labels = map[string]string{"team": "ml"} }), tags) {
		t.Error("a custom image's labels are in its user data, yet do not change the digest")
	}
	if got := digest(derived(t, func(*topology.Profile) {}), map[string]string{topology.TagCluster: "mixed", topology.TagOwner: "ml-team"}); got == base {
		t.Error("a new owner tag (on the instances the template launches) leaves the digest as it was")
	}
	for what, edit := range map[string]func(*topology.Profile){
		"a new size":               func(p *topology.Profile) { p.MinNodes, p.MaxNodes = 2, 2 },
		"a managed image's labels": func(p *topology.Profile) { p.Labels = map[string]string{"team": "ml"} },
	} {
		if got := digest(derived(t, edit), tags); got != base {
			t.Errorf("%s changes the template digest, yet the template is the same", what)
		}
	}
}
