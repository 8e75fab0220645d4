package topology

import "testing"

// exampleFabricManagerImage is a digest-pinned reference of the shape a stack names.
const exampleFabricManagerImage = "111122223333.dkr.ecr.us-west-2.amazonaws.com/nvidia-fabricmanager:580.159.03@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestFabricManagerImageReachesTheDaemonSetPoolsOnly: the stack's image is in the spec, and only
// the pool whose fabric manager is gpucluster's DaemonSet has its health gate read the status
// file that DaemonSet writes; the EKS image's pool (fabric manager on the host) does not.
func TestFabricManagerImageReachesTheDaemonSetPoolsOnly(t *testing.T) {
	spec, err := parseAndDerive(t, "config:\n  aws:region: us-west-2\n  "+KeyFabricManagerImage+": "+exampleFabricManagerImage+"\n"+
		"  gpucluster:pools:\n    - {name: custom, profile: p4d-efa, amiFamily: custom, amiId: ami-0123456789abcdef0}\n    - {name: eks, profile: p4d-efa}\n")
	if err != nil {
		t.Fatal(err)
	}
	if spec.FabricManagerImage != exampleFabricManagerImage {
		t.Errorf("spec's fabric-manager image %q", spec.FabricManagerImage)
	}
	want := map[string]string{"custom": "/run/gpucluster/fabricmanager/status", "eks": ""}
	for _, p := range spec.Pools {
		if got := p.HealthGate.FabricManagerStatus; got != want[p.Name] || p.InCluster.FabricManager.Deploy != (want[p.Name] != "") {
			t.Errorf("pool %s: gate reads %q, DaemonSet %v; want %q", p.Name, got, p.InCluster.FabricManager.Deploy, want[p.Name])
		}
	}
}

// TestOnlyADigestPinsTheFabricManagerImage: a reference is accepted only with a sha256 digest of
// 64 lower-case hex digits (OCI image-spec descriptor.md: the sha256 encoded portion).
func TestOnlyADigestPinsTheFabricManagerImage(t *testing.T) {
	hex64 := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for ref, ok := range map[string]bool{
		"r.example/fm@sha256:" + hex64:                           true,
		"r.example:5000/team/fm:580.159.03@sha256:" + hex64:      true,
		"r.example/fm:580.159.03":                                false,
		"r.example/fm@sha256:" + hex64[:63]:                      false,
		"r.example/fm@sha256:" + hex64 + "0":                     false,
		"r.example/fm@sha256:" + "0123456789ABCDEF" + hex64[16:]: false,
		"r.example/fm@sha512:" + hex64:                           false,
		"@sha256:" + hex64:                                       false,
	} {
		if got := digestPinnedImage.MatchString(ref); got != ok {
			t.Errorf("%s: pinned %v, want %v", ref, got, ok)
		}
	}
}
