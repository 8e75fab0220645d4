// Package experiment plans an A/B of topologies: several stacks brought up side by side, the
// same job run on each, and every one destroyed. What is checked here is what must hold before
// anything is created: every stack's plan is clean, the account allows the stacks together,
// and nothing can outlive the experiment.
package experiment

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Stack is one stack of the experiment, as its offline plan derived it.
type Stack struct {
	Name   string
	Spec   topology.StackSpec
	Errors int    // the plan's error findings
	Review string // where the plan wrote its REVIEW.md
}

// StackPlan is what the experiment holds one stack to.
type StackPlan struct {
	Name   string `json:"name"`
	Review string `json:"review"`
	// Expiry is the stack file's gpucluster:expiresAt (zero: none); ExpiresBy is the one the
	// experiment holds it to: the earlier of that and the experiment's end, so that the stack's
	// GPU pools stop even if the command that started them dies.
	Expiry    time.Time `json:"expiry,omitzero"`
	ExpiresBy time.Time `json:"expiresBy"`
	// USDPerHourAtMost is the stack at every pool's maximum (topology.EstimateCost); a floor when
	// PricesComplete is false.
	USDPerHourAtMost float64 `json:"usdPerHourAtMost"`
	PricesComplete   bool    `json:"pricesComplete"`
	PlanErrors       int     `json:"planErrors"`
}

// Quota is one EC2 vCPU quota of one region, as the stacks need it side by side.
type Quota struct {
	Region string `json:"region"`
	Name   string `json:"name"`
	// VCPUs is what the stacks need together at every pool's maximum; Largest the most one of
	// them needs, which is what its REVIEW.md asks of the account.
	VCPUs   int            `json:"vcpus"`
	Largest int            `json:"largestStack"`
	ByStack map[string]int `json:"byStack"`
	// Account is what the user says the account allows (0: not said).
	Account int `json:"account,omitempty"`
}

// Plan is the experiment before anything exists.
type Plan struct {
	Stacks []StackPlan `json:"stacks"`
	Quotas []Quota     `json:"quotas"`
	// Until is when every stack expires at the latest: the start plus the longest the
	// experiment may run, to the minute.
	Until time.Time `json:"until"`
	// USDAtMost is every stack at its maximum until Until: the most the experiment can cost.
	USDAtMost      float64 `json:"usdAtMost"`
	PricesComplete bool    `json:"pricesComplete"`
	// Refusals say why the experiment must not start, each with its fix; none when it may.
	Refusals []string `json:"refusals,omitempty"`
}

// Check plans the experiment over stacks started at now for at most maxDuration. account holds
// the vCPU quotas the user says the account allows, by quota name (every region).
func Check(stacks []Stack, now time.Time, maxDuration time.Duration, account map[string]int) (Plan, error) {
	p := Plan{Until: now.UTC().Add(maxDuration).Add(time.Minute - time.Nanosecond).Truncate(time.Minute), PricesComplete: true}
	quotas := map[string]*Quota{} // by region and name
	hours := p.Until.Sub(now).Hours()
	for _, s := range stacks {
		cost := topology.EstimateCost(s.Spec, now)
		sp := StackPlan{Name: s.Name, Review: s.Review, Expiry: s.Spec.ExpiresAt(), ExpiresBy: p.Until,
			USDPerHourAtMost: cost.AtMost, PricesComplete: cost.Complete, PlanErrors: s.Errors}
		if !sp.Expiry.IsZero() && sp.Expiry.Before(p.Until) {
			sp.ExpiresBy = sp.Expiry
		}
		p.Stacks = append(p.Stacks, sp)
		p.USDAtMost += cost.AtMost * hours
		p.PricesComplete = p.PricesComplete && cost.Complete
		if s.Errors > 0 {
			p.Refusals = append(p.Refusals, fmt.Sprintf("stack %s: its plan has %d error(s), listed in %s: fix them in stacks/Pulumi.%s.yaml", s.Name, s.Errors, s.Review, s.Name))
		}
		need, err := topology.VCPUQuotas(s.Spec)
		if err != nil {
			return Plan{}, fmt.Errorf("stack %s: %w", s.Name, err)
		}
		for _, q := range need {
			key := s.Spec.Region + "\x00" + q.Name
			if quotas[key] == nil {
				quotas[key] = &Quota{Region: s.Spec.Region, Name: q.Name, ByStack: map[string]int{}, Account: account[q.Name]}
			}
			all := quotas[key]
			all.VCPUs += q.VCPUs
			all.Largest = max(all.Largest, q.VCPUs)
			all.ByStack[s.Name] += q.VCPUs
		}
	}
	if err := checkQuotaNames(quotas, account); err != nil {
		return Plan{}, err
	}
	for _, key := range topology.SortedKeys(quotas) {
		q := quotas[key]
		p.Quotas = append(p.Quotas, *q)
		if refusal := q.refusal(); refusal != "" {
			p.Refusals = append(p.Refusals, refusal)
		}
	}
	return p, nil
}

// refusal says why the account may not allow the stacks together, and what to do; "" when it does.
func (q Quota) refusal() string {
	parts := make([]string, 0, len(q.ByStack))
	for _, name := range topology.SortedKeys(q.ByStack) {
		parts = append(parts, fmt.Sprintf("%s %d", name, q.ByStack[name]))
	}
	need := fmt.Sprintf("%s in %s: the stacks need %d vCPUs side by side (%s)", q.Name, q.Region, q.VCPUs, strings.Join(parts, ", "))
	switch {
	case q.Account > 0 && q.VCPUs > q.Account:
		return fmt.Sprintf("%s; the account allows %d (--quota): raise the quota to %d in Service Quotas, or compare fewer stacks at once", need, q.Account, q.VCPUs)
	case q.Account == 0 && q.VCPUs > q.Largest:
		return fmt.Sprintf("%s, and each REVIEW.md asks the account for at most %d. Check the account's quota (aws service-quotas list-service-quotas --service-code ec2 --region %s) and, if it allows %d, say so: --quota '%s=%d'",
			need, q.Largest, q.Region, q.VCPUs, q.Name, q.VCPUs)
	}
	return ""
}

// QuotaNamesErr is the error of a quota the user names that none of specs needs (a typo), nil
// if every one is needed: said before any stack is planned.
func QuotaNamesErr(specs []topology.StackSpec, account map[string]int) error {
	quotas := map[string]*Quota{}
	for _, s := range specs {
		need, err := topology.VCPUQuotas(s)
		if err != nil {
			return nil // said by Check, with the stack's name
		}
		for _, q := range need {
			quotas[s.Region+"\x00"+q.Name] = &Quota{Region: s.Region, Name: q.Name}
		}
	}
	return checkQuotaNames(quotas, account)
}

func checkQuotaNames(quotas map[string]*Quota, account map[string]int) error {
	for _, name := range topology.SortedKeys(account) {
		if !needed(quotas, name) {
			return fmt.Errorf("--quota %q: no stack of the experiment needs that quota; they need: %s", name, strings.Join(quotaNames(quotas), "; "))
		}
	}
	return nil
}

func needed(quotas map[string]*Quota, name string) bool {
	for _, q := range quotas {
		if q.Name == name {
			return true
		}
	}
	return false
}

func quotaNames(quotas map[string]*Quota) []string {
	seen := map[string]bool{}
	for _, q := range quotas {
		seen[q.Name] = true
	}
	if len(seen) == 0 {
		return []string{"none (no GPU pool outside reserved capacity)"}
	}
	return topology.SortedKeys(seen)
}
