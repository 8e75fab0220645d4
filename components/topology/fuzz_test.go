package topology

import (
	"errors"
	"testing"
)

// fuzzSeeds are valid and invalid stack files; `go test ./...` runs them as the seed corpus.
var fuzzSeeds = []string{
	"config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: gpu, profile: dev}\n",
	"config:\n  aws:region: us-west-2\n  gpucluster:pools:\n    - name: a\n      profile: p5-efa\n      nodes: 3\n      availabilityZones: [us-west-2a]\n    - name: b\n      profile: g6e-ena\n      minNodes: 0\n      maxNodes: 8\n",
	"config:\n  aws:region: us-east-1\n  gpucluster:fabricManagerImage: r.example/fm@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n  gpucluster:pools:\n    - name: p\n      profile: p4d-efa\n      amiFamily: custom\n      amiId: ami-0123456789abcdef0\n      podLayout: pod-per-gpu\n      podsPerNode: 4\n",
	"config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - name: k\n      profile: karpenter-p5\n      capacity: capacity-block\n      capacityReservationId: cr-0123456789abcdef0\n",
	"config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - name: t\n      profile: g6e-efa\n      taints: [{key: a.io/b, value: c, effect: NoExecute}]\n      tolerations: [{operator: Exists}]\n      labels: {x: y}\n      ncclEnv: {NCCL_PROTO: simple}\n",
	"config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - name: p\n      profile: p5-efa\n      placement: partition\n      partitions: 3\n      fabric: ena-only\n      availabilityZones: [us-east-1a, us-east-1b]\n",
	"config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - &a {name: x, profile: dev}\n    - *a\n",
	"config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - name: p\n      profile: p4d-efa\n      efaInterfaces: 9\n      shmSize: 0\n      nodes: -1\n",
	"config: {a: b",
	"",
	"config:\n  aws:region: us-east-1\n  gpucluster:pools: [[]]\n",
}

func FuzzParseStack(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStack(file, data)
		if err != nil {
			var ces ConfigErrors
			if !errors.As(err, &ces) || len(ces) == 0 {
				t.Fatalf("error %T %v is not a non-empty ConfigErrors", err, err)
			}
			for _, e := range ces {
				if e.File != file || e.Key == "" || e.Message == "" || e.Fix == "" || e.Line < 0 {
					t.Fatalf("incomplete error %+v", e)
				}
			}
			return
		}
		// What the parser accepts, the derivation must take: validation is complete.
		spec, err := DeriveStack(st, planDay)
		if err != nil {
			t.Fatalf("accepted stack does not derive: %v", err)
		}
		if len(spec.Pools) == 0 {
			t.Fatal("accepted stack without pools")
		}
		for i, pool := range st.Pools {
			checkSpecInvariants(t, pool.Profile, spec.Pools[i])
		}
	})
}
