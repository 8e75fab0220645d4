package program

import (
	"path/filepath"
	"testing"

	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/test/destroyorder"
)

// deletedAfter returns, for a resource, every resource `pulumi destroy` deletes after it: Pulumi
// deletes a resource before each resource it depends on (explicit and property dependencies, as
// the engine recorded them) and a child before its parent, transitively.
func deletedAfter(res []offline.Resource, urn string) map[string]bool {
	byURN := map[string]offline.Resource{}
	for _, r := range res {
		byURN[r.URN] = r
	}
	out := map[string]bool{}
	var visit func(u string)
	visit = func(u string) {
		r := byURN[u]
		next := append([]string{}, r.Dependencies...)
		if r.Parent != "" {
			next = append(next, r.Parent)
		}
		for _, d := range next {
			if !out[d] {
				out[d] = true
				visit(d)
			}
		}
	}
	visit(urn)
	return out
}

// TestDestroyOrder: in every stack, each resource a destroy-order rule names as a user
// (test/destroyorder) has every resource it needs among those deleted after it, as the engine
// recorded the dependencies.
func TestDestroyOrder(t *testing.T) {
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		stack := filepath.Base(file)
		for _, rule := range destroyorder.Rules(ev.spec) {
			users := 0
			for _, u := range ev.res {
				if !rule.IsUser(asRule(u)) {
					continue
				}
				users++
				after := deletedAfter(ev.res, u.URN)
				needed := 0
				for _, x := range ev.res {
					if !rule.Need(asRule(x)) {
						continue
					}
					needed++
					if !after[x.URN] {
						t.Errorf("%s: %s %s may be deleted before %s %s, which needs it until its instances are gone", stack, x.Type, x.Name, u.Type, u.Name)
					}
				}
				if needed == 0 {
					t.Errorf("%s: no %s to check against %s", stack, rule.What, u.Name)
				}
			}
			if users == 0 {
				t.Errorf("%s: nothing the rule on the %s applies to (a pool with nothing that launches its instances?)", stack, rule.What)
			}
		}
	}
}

func asRule(r offline.Resource) destroyorder.Resource {
	return destroyorder.Resource{Type: r.Type, Name: r.Name}
}
