package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// The instant every test plans at: a test never depends on the day it runs.
var at = time.Date(2026, 12, 7, 10, 30, 15, 0, time.UTC)

// stack derives one of the project's stack files, as `gpucluster plan` does.
func stack(t *testing.T, name string) Stack {
	t.Helper()
	spec, err := topology.LoadStack("../../stacks/Pulumi."+name+".yaml", at)
	if err != nil {
		t.Fatal(err)
	}
	return Stack{Name: name, Spec: spec, Review: "review/" + name + "/REVIEW.md"}
}

const gQuota = "Running On-Demand G and VT instances"

// The field's A/B (g6e over EFA against g6e over ENA) draws both stacks from one vCPU quota:
// side by side they need the sum, more than either REVIEW.md asks of the account, so the plan
// refuses until the user says the account allows it, and refuses again if it does not.
func TestQuotasOfStacksSideBySideAreSummed(t *testing.T) {
	efa, ena := stack(t, "g6e-efa"), stack(t, "g6e-ena")
	need := func(s Stack) int {
		qs, err := topology.VCPUQuotas(s.Spec)
		if err != nil || len(qs) != 1 || qs[0].Name != gQuota {
			t.Fatalf("%s: quotas %+v, %v", s.Name, qs, err)
		}
		return qs[0].VCPUs
	}
	sum := need(efa) + need(ena)
	p, err := Check([]Stack{efa, ena}, at, 4*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Quotas) != 1 || p.Quotas[0].VCPUs != sum || p.Quotas[0].Largest != max(need(efa), need(ena)) || p.Quotas[0].Region != efa.Spec.Region {
		t.Fatalf("quotas %+v; want %d vCPUs of %s", p.Quotas, sum, gQuota)
	}
	if len(p.Refusals) != 1 || !strings.Contains(p.Refusals[0], "--quota '"+gQuota+"=") {
		t.Fatalf("refusals %q; want one, asking for the account's quota", p.Refusals)
	}
	for _, c := range []struct {
		account int
		refused bool
	}{{sum, false}, {sum + 100, false}, {sum - 1, true}} {
		p, err := Check([]Stack{efa, ena}, at, 4*time.Hour, map[string]int{gQuota: c.account})
		if err != nil {
			t.Fatal(err)
		}
		if refused := len(p.Refusals) > 0; refused != c.refused || refused && !strings.Contains(p.Refusals[0], "raise the quota") {
			t.Errorf("account allows %d of %d: refusals %q", c.account, sum, p.Refusals)
		}
	}
}

// A quota the user names that no stack needs is a typo, said before anything else.
func TestQuotaNoStackNeedsIsAnError(t *testing.T) {
	_, err := Check([]Stack{stack(t, "g6e-efa"), stack(t, "g6e-ena")}, at, time.Hour, map[string]int{"Running On-Demand P instances": 96})
	if err == nil || !strings.Contains(err.Error(), gQuota) {
		t.Fatalf("err %v; want one naming the quota the stacks need", err)
	}
}

// Stacks in different regions draw on different quotas: neither is added to the other.
func TestQuotasOfOtherRegionsStayApart(t *testing.T) {
	efa, ena := stack(t, "g6e-efa"), stack(t, "g6e-ena")
	ena.Spec.Region = "eu-north-1"
	p, err := Check([]Stack{efa, ena}, at, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Quotas) != 2 || len(p.Refusals) != 0 {
		t.Fatalf("quotas %+v refusals %q; want one per region, none refused", p.Quotas, p.Refusals)
	}
}

// Every stack expires by the experiment's end, to the minute: one without an expiry, or with a
// later one, gets the end; an earlier one of its own stays.
func TestEveryStackExpiresByTheEnd(t *testing.T) {
	efa, ena := stack(t, "g6e-efa"), stack(t, "g6e-ena")
	efa.Spec.Expiry, ena.Spec.Expiry = "", "2026-12-07T11:00:00Z"
	p, err := Check([]Stack{efa, ena}, at, 2*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 12, 7, 12, 31, 0, 0, time.UTC) // 10:30:15 + 2h, up to the minute
	if !p.Until.Equal(end) || !p.Stacks[0].ExpiresBy.Equal(end) || !p.Stacks[0].Expiry.IsZero() {
		t.Errorf("until %v, %s expires by %v; want %v", p.Until, efa.Name, p.Stacks[0].ExpiresBy, end)
	}
	if own := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC); !p.Stacks[1].ExpiresBy.Equal(own) {
		t.Errorf("%s expires by %v; want its own earlier %v", ena.Name, p.Stacks[1].ExpiresBy, own)
	}
	ena.Spec.Expiry = "2026-12-08T00:00:00Z"
	if p, _ := Check([]Stack{efa, ena}, at, 2*time.Hour, nil); !p.Stacks[1].ExpiresBy.Equal(end) {
		t.Errorf("a later expiry of its own: expires by %v; want the end %v", p.Stacks[1].ExpiresBy, end)
	}
}

// The most the experiment can cost is every stack at its maximum until the end, priced as
// `gpucluster plan` prices each.
func TestTheMostItCostsIsEveryStackAtItsMaximumUntilTheEnd(t *testing.T) {
	efa, ena := stack(t, "g6e-efa"), stack(t, "g6e-ena")
	p, err := Check([]Stack{efa, ena}, at, 3*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	hours := p.Until.Sub(at).Hours()
	want := (topology.EstimateCost(efa.Spec, at).AtMost + topology.EstimateCost(ena.Spec, at).AtMost) * hours
	if p.USDAtMost <= 0 || p.USDAtMost < want-0.01 || p.USDAtMost > want+0.01 {
		t.Errorf("at most $%.2f; want $%.2f", p.USDAtMost, want)
	}
	if p.Stacks[0].USDPerHourAtMost <= 0 {
		t.Errorf("%s at $%.2f per hour", efa.Name, p.Stacks[0].USDPerHourAtMost)
	}
}

// A stack whose plan has errors stops the experiment, naming the stack and its review.
func TestAPlanWithErrorsIsRefused(t *testing.T) {
	efa, ena := stack(t, "g6e-efa"), stack(t, "g6e-ena")
	ena.Errors = 2
	p, err := Check([]Stack{efa, ena}, at, time.Hour, map[string]int{gQuota: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Refusals) != 1 || !strings.Contains(p.Refusals[0], "stack g6e-ena") || !strings.Contains(p.Refusals[0], ena.Review) {
		t.Fatalf("refusals %q", p.Refusals)
	}
}
