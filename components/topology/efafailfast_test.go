package topology

import (
	"slices"
	"strings"
	"testing"
)

// TestImageOFIVersion reads aws-ofi-nccl's version from the tags that name it, and from no other
// part of the reference.
func TestImageOFIVersion(t *testing.T) {
	for _, c := range []struct {
		image string
		want  string // "" when the tag names none
	}{
		{DefaultTrainingImage, "1.19.0"},
		{"public.ecr.aws/hpc-cloud/nccl-tests:cuda12.2.2-efa1.30.0-ofiv1.7.3-aws-ncclv2.18.5-1-testsv2.13.9", "1.7.3"},
		{"registry.example/nccl:ofi1.12-nccl2.21", "1.12.0"},
		{"registry.example/nccl-tests:cuda13.0.2-efa1.48.0-ofiv1.19.0@sha256:0123", "1.19.0"},
		{"registry.example/ofiv1.19.0/nccl-tests:latest", ""},
		{"registry.example/nccl-tests", ""},
		{"registry.example:5000/nccl-tests", ""},
		{"registry.example/nccl-tests:profiv1.2.3", ""},
	} {
		v, ok := imageOFIVersion(c.image)
		got := ""
		if ok {
			got = v.String()
		}
		if got != c.want {
			t.Errorf("imageOFIVersion(%q) = %q, want %q", c.image, got, c.want)
		}
	}
}

// TestEFAFailFastEnvFollowsThePluginVersion: NCCL_NET is the name the image's plugin answers to
// (the current one where the tag says the plugin has it, the old one that every version from 1.7
// answers to otherwise), and FI_PROVIDER is set only for a plugin that does not keep to EFA.
func TestEFAFailFastEnvFollowsThePluginVersion(t *testing.T) {
	for _, c := range []struct{ image, want string }{
		{DefaultTrainingImage, "NCCL_NET=Libfabric"},
		{"r.example/nccl:x-ofiv1.13.0-y", "NCCL_NET=Libfabric"},
		{UnconfirmedTrainingImage, "NCCL_NET=Libfabric"}, // aws-ofi-nccl 1.21.1
		{"r.example/nccl:x-ofiv1.12.1-y", "NCCL_NET=AWS Libfabric"},
		{"r.example/nccl:x-ofiv1.5.0-y", "FI_PROVIDER=efa NCCL_NET=AWS Libfabric"},
		{"r.example/team/train:2026-11", "NCCL_NET=AWS Libfabric"},
	} {
		var got []string
		for _, e := range efaFailFastEnv(c.image) {
			got = append(got, e.Name+"="+e.Value)
			if e.Why == "" || e.Source != "gpucluster" {
				t.Errorf("%s: %s has no reason or is not gpucluster's: %+v", c.image, e.Name, e)
			}
		}
		slices.Sort(got)
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("%s: %s, want %s", c.image, s, c.want)
		}
	}
}

// TestEFAPoolsFailFast: every pool with EFA interfaces carries NCCL_NET in its training pod and
// its NCCL benchmark; a pool without EFA does not; the pool's own ncclEnv wins; the stack turns
// it off only with a reason, which the pool's findings carry.
func TestEFAPoolsFailFast(t *testing.T) {
	derive := func(extra string) StackSpec {
		t.Helper()
		st, err := ParseStack("s.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:benchmarks: {enabled: true}\n"+
			"  gpucluster:pools:\n  - {name: efa, profile: p5-efa}\n  - {name: ena, profile: g6e-ena}\n"+
			"  - {name: own, profile: p4d-efa, ncclEnv: {NCCL_NET: Socket}}\n"+extra))
		if err != nil {
			t.Fatal(err)
		}
		spec, err := DeriveStack(st, planDay)
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	value := func(env []EnvVar, name string) string {
		for _, e := range env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	pool := func(spec StackSpec, name string) PoolSpec {
		t.Helper()
		i := slices.IndexFunc(spec.Pools, func(p PoolSpec) bool { return p.Name == name })
		if i < 0 {
			t.Fatalf("no pool %s", name)
		}
		return spec.Pools[i]
	}
	spec := derive("")
	for _, c := range []struct{ pool, want string }{{"efa", OFIPluginName}, {"ena", ""}, {"own", "Socket"}} {
		p := pool(spec, c.pool)
		if got := value(p.TrainingPod.Env, "NCCL_NET"); got != c.want {
			t.Errorf("pool %s: NCCL_NET %q in its training pod, want %q", c.pool, got, c.want)
		}
		if got := value(p.Benchmark.NCCL.Env, "NCCL_NET"); got != c.want {
			t.Errorf("pool %s: NCCL_NET %q in its NCCL benchmark, want %q", c.pool, got, c.want)
		}
	}
	off := derive("  gpucluster:efaFailFast: {enabled: false, reason: our image names its plugin OFI}\n")
	p := pool(off, "efa")
	if got := value(p.TrainingPod.Env, "NCCL_NET"); got != "" {
		t.Errorf("turned off, the pool still sets NCCL_NET=%s", got)
	}
	found := false
	for _, f := range p.Findings {
		found = found || f.Code == FindingEFAFailFastOff && strings.Contains(f.Message, "our image names its plugin OFI")
	}
	if !found {
		t.Errorf("turned off, the pool's findings do not say so with the reason: %+v", p.Findings)
	}
}
