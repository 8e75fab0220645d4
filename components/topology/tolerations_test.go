package topology

import (
	"reflect"
	"testing"
)

// TestTolerationsAreOnesKubernetesAccepts: every toleration a pool's in-cluster pieces carry is
// one the API server accepts (Kubernetes API reference, Toleration: the operator is Exists or
// Equal, and "if the operator is Exists, the value should be empty"; the API server refuses
// anything else), and the startup tolerations are the pool's startup taints, matched exactly:
// every GPU pool's health taint, written out here as the nodes carry it.
func TestTolerationsAreOnesKubernetesAccepts(t *testing.T) {
	for _, name := range BuiltinProfileNames() {
		p, _ := BuiltinProfile(name)
		spec, err := Derive("gpu", p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tol := range append(append([]Toleration{}, spec.Tolerations...), spec.StartupTolerations()...) {
			if (tol.Operator != "Exists" && tol.Operator != "Equal") || (tol.Operator == "Exists" && tol.Value != "") {
				t.Errorf("%s: toleration %+v is not one the API server accepts", name, tol)
			}
		}
		want := []Toleration{{Key: "gpucluster.io/health", Operator: "Equal", Value: "checking", Effect: "NoSchedule"}}
		if got := spec.StartupTolerations(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: startup tolerations %+v, want %+v", name, got, want)
		}
	}
}
