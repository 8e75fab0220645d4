package topology

import (
	"math"
	"strings"
	"testing"
	"time"
)

// planDay is the instant every test of the package judges a stack on (DeriveStack), so that no
// test depends on the day it runs: 1.32 and 1.33 in extended support, 1.34 leaving
// standard support within the week, 1.35 and 1.36 in it (standardSupportEnds).
var planDay = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// TestControlPlaneIsPricedByItsSupport: $0.10 in standard support, $0.60 from the day a version
// leaves it, and at most $0.60 when the stack's expiry is after that day.
func TestControlPlaneIsPricedByItsSupport(t *testing.T) {
	for _, c := range []struct {
		version, expiry  string
		atDeploy, atMost float64
		note             string
	}{
		{"1.32", "", 0.60, 0.60, "extended support since 2026-03-23"},
		{"1.33", "", 0.60, 0.60, "extended support since 2026-07-29"},
		{"1.34", "", 0.10, 0.10, "standard support until 2026-12-02; $0.60 per hour after"},
		{"1.34", "2026-11-30T18:00:00Z", 0.10, 0.10, "standard support until 2026-12-02"},
		{"1.34", "2026-12-05T18:00:00Z", 0.10, 0.60, "extended support from 2026-12-02, before the expiry"},
		{"1.36", "2026-12-05T18:00:00Z", 0.10, 0.10, "standard support until 2027-08-02"},
	} {
		s := StackSpec{Cluster: ClusterSettings{KubernetesVersion: c.version}, Expiry: c.expiry}
		l := controlPlaneCost(s, planDay)
		if l.AtDeploy != c.atDeploy || l.AtMost != c.atMost || !strings.Contains(l.Note, c.note) || !strings.Contains(l.Item, c.version) {
			t.Errorf("%s, expiry %q: %+v, want %.2f, %.2f, %q", c.version, c.expiry, l, c.atDeploy, c.atMost, c.note)
		}
	}
	// Under the STANDARD policy EKS upgrades the cluster instead: never the extended price.
	s0 := StackSpec{Cluster: ClusterSettings{KubernetesVersion: "1.34", UpgradePolicy: UpgradePolicyStandard}, Expiry: "2026-12-05T18:00:00Z"}
	if l := controlPlaneCost(s0, planDay); l.AtDeploy != 0.10 || l.AtMost != 0.10 || !strings.Contains(l.Note, "when EKS upgrades the cluster") {
		t.Errorf("1.34 under STANDARD: %+v", l)
	}
	// The first day of extended support is billed at the extended price, from midnight UTC.
	s := StackSpec{Cluster: ClusterSettings{KubernetesVersion: "1.34"}}
	if before, on := controlPlaneCost(s, time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)), controlPlaneCost(s, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)); before.AtDeploy != 0.10 || on.AtDeploy != 0.60 {
		t.Errorf("the day before: %.2f, the day: %.2f", before.AtDeploy, on.AtDeploy)
	}
}

// TestSupportWindowIsWarnedAtTheVersionLine: a version in extended support, one leaving it within
// 30 days, and one leaving it before the expiry are warnings at the kubernetesVersion line; a
// version in standard support well past the plan (and the expiry) is not.
func TestSupportWindowIsWarnedAtTheVersionLine(t *testing.T) {
	for _, c := range []struct{ version, expiry, want string }{
		{"1.33", "", "Kubernetes 1.33 has been in EKS extended support since 2026-07-29: the control plane costs $0.60 per hour instead of $0.10"},
		{"1.34", "", "Kubernetes 1.34 leaves EKS standard support on 2026-12-02, in 5 days: from then the control plane costs $0.60"},
		{"1.35", "2027-04-01T08:00:00Z", "Kubernetes 1.35 leaves EKS standard support on 2027-03-27, before the stack's expiry 2027-04-01T08:00:00Z"},
		{"1.35", "2027-03-01T08:00:00Z", ""},
		{"1.36", "", ""},
	} {
		checkSupport(t, c.version, "", c.expiry, c.want, "")
	}
}

// TestStandardUpgradePolicyFollowsEKSUpgrade: under STANDARD, a version leaving standard support
// soon is a warning that EKS will upgrade the cluster; one already past it is an error (the stack
// file would name an older version than the cluster runs), naming the version EKS moves it to.
func TestStandardUpgradePolicyFollowsEKSUpgrade(t *testing.T) {
	checkSupport(t, "1.34", UpgradePolicyStandard, "", "Kubernetes 1.34 leaves EKS standard support on 2026-12-02, in 5 days: from then EKS upgrades the cluster", "")
	checkSupport(t, "1.33", UpgradePolicyStandard, "", "", "Kubernetes 1.33 left EKS standard support on 2026-07-29: under gpucluster:upgradePolicy STANDARD EKS upgrades the cluster to 1.34")
	checkSupport(t, "1.36", UpgradePolicyStandard, "", "", "")
	if _, err := ParseStack("p.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:upgradePolicy: NEVER\n  gpucluster:pools: [{name: gpu, profile: dev}]\n")); err == nil ||
		!strings.Contains(err.Error(), "p.yaml:3: gpucluster:upgradePolicy: unknown upgrade policy \"NEVER\"") {
		t.Errorf("an unknown policy: %v", err)
	}
}

// checkSupport loads a stack of the version, policy and expiry on planDay: wantWarning is the one
// warning expected ("" for none), wantError the error.
func checkSupport(t *testing.T, version, policy, expiry, wantWarning, wantError string) {
	t.Helper()
	data := "config:\n  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"" + version + "\"\n"
	if policy != "" {
		data += "  gpucluster:upgradePolicy: " + policy + "\n"
	}
	if expiry != "" {
		data += "  gpucluster:expiresAt: \"" + expiry + "\"\n"
	}
	data += "  gpucluster:pools: [{name: gpu, profile: dev}]\n"
	st, err := ParseStack("v.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	spec := StackSpec{Cluster: st.Cluster, Expiry: st.Expiry}
	err = checkSupportWindow(&spec, st, planDay)
	if (err == nil) != (wantError == "") || err != nil && (!strings.Contains(err.Error(), wantError) || !strings.Contains(err.Error(), "v.yaml:3: "+KeyKubernetesVersion)) {
		t.Errorf("%s under %q: error %v, want %q", version, policy, err, wantError)
	}
	switch {
	case wantWarning == "" && len(spec.Warnings) > 0:
		t.Errorf("%s under %q: %v", version, policy, spec.Warnings)
	case wantWarning != "" && (len(spec.Warnings) != 1 || !strings.Contains(spec.Warnings[0].Message, wantWarning) ||
		spec.Warnings[0].Line != 3 || spec.Warnings[0].Key != KeyKubernetesVersion || !strings.Contains(spec.Warnings[0].Fix, "1.36")):
		t.Errorf("%s under %q, expiry %q: %+v, want one warning at line 3: %q", version, policy, expiry, spec.Warnings, wantWarning)
	}
}

// The dev stack worked by hand: control plane 0.10 + NAT 0.045 + 2 × m7i.large 0.1008 + volumes
// (2 × 50 GiB + 1 × 200 GiB of gp3 at 0.08 per GB-month over 730 hours) + 1 × g6e.xlarge 1.861.
func TestEstimateCostByHand(t *testing.T) {
	spec, err := ParseStack("dev.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: dev}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DeriveStack(spec, planDay)
	if err != nil {
		t.Fatal(err)
	}
	c := EstimateCost(s, planDay)
	want := 0.10 + 0.045 + 2*0.1008 + (2*50+200)*0.08/730 + 1.861
	if math.Abs(c.AtDeploy-want) > 1e-9 || math.Abs(c.AtMost-want) > 1e-9 || !c.Complete || len(c.Lines) != 5 {
		t.Errorf("cost %+v, want %.6f", c, want)
	}
}

// Reserved capacity is listed apart and never in the hourly totals; spot is priced at its ceiling.
func TestReservedCapacityIsNotAnHourlyCost(t *testing.T) {
	data := "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: train, profile: p5-efa, nodes: 4, capacity: capacity-block, capacityReservationId: cr-0123456789abcdef0}\n"
	st, err := ParseStack("r.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := DeriveStack(st, planDay)
	c := EstimateCost(s, planDay)
	if len(c.Reserved) != 1 || c.Reserved[0].Pool != "train" || !strings.Contains(c.Reserved[0].Note, "billed by the reservation") || c.AtMost > 1 {
		t.Errorf("reserved %+v, total at most %.2f", c.Reserved, c.AtMost)
	}
}

// Within the guard the stack passes; a pool the guard cannot price is a warning naming it.
func TestCostGuardWithinAndUnpriced(t *testing.T) {
	st, err := ParseStack("g.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:maxHourlyCost: 3\n  gpucluster:pools: [{name: gpu, profile: dev}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := DeriveStack(st, planDay); err != nil || s.MaxHourlyCost != 3 {
		t.Errorf("dev under a $3 guard: %v", err)
	}
	st, _ = ParseStack("g.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:maxHourlyCost: 1000\n  gpucluster:pools: [{name: gpu, profile: p5-efa, instanceType: p5e.48xlarge}]\n"))
	s, err := DeriveStack(st, planDay)
	if err != nil || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0].Message, "cannot price") {
		t.Errorf("p5e (no on-demand price): %v %v", err, s.Warnings)
	}
}
