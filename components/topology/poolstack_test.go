package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkRefusal loads a one-pool stack file and checks that it is refused with the given words
// exactly when refused is true, and accepted without an error otherwise.
func checkRefusal(t *testing.T, what, stack, words string, refused bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "Pulumi.test.yaml")
	if err := os.WriteFile(file, []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadStack(file, planDay)
	if got := err != nil && strings.Contains(err.Error(), words); got != refused || (!refused && err != nil) {
		t.Errorf("%s: %v; refused (%q) want %v", what, err, words, refused)
	}
}

// TestUltraServerKubernetesBoundary: the pinned DRA driver runs from Kubernetes 1.34 [eks-dra];
// 1.34 itself is accepted and 1.33 refused, so that the boundary holds in both directions.
func TestUltraServerKubernetesBoundary(t *testing.T) {
	for version, refused := range map[string]bool{"1.33": true, "1.34": false, "1.36": false} {
		stack := "config:\n  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"" + version + "\"\n" +
			"  gpucluster:pools:\n    - {name: nvl, profile: gb200-nvl72, capacityReservationId: cr-0123456789abcdef0}\n"
		checkRefusal(t, "a GB200 pool on Kubernetes "+version, stack, "needs Kubernetes 1.34 or newer", refused)
	}
}

// TestDefaultImageDriverBoundary: the default training image is built with CUDA 13, which needs
// NVIDIA driver 580 or newer (CUDA 13.0 release notes, "CUDA Toolkit and Minimum Required
// Driver Version"); where the benchmark jobs run it, a custom image's driver 579 is refused and
// 580 accepted.
func TestDefaultImageDriverBoundary(t *testing.T) {
	for driver, refused := range map[string]bool{"570.195.03": true, "579.99.99": true, "580.65.06": false, "590.10.01": false} {
		stack := "config:\n  aws:region: us-west-2\n  gpucluster:nvidiaDriverVersion: \"" + driver + "\"\n  gpucluster:benchmarks: {enabled: true}\n" +
			"  " + KeyFabricManagerImage + ": " + exampleFabricManagerImage + "\n" +
			"  gpucluster:pools:\n    - {name: gpu, profile: p4d-efa, amiFamily: custom, amiId: ami-0123456789abcdef0}\n"
		checkRefusal(t, "a custom image with driver "+driver+" under the default training image", stack, "which needs driver 580 or newer", refused)
	}
}

// TestTheDefaultImageIsRefusedOnlyWhereBenchmarksRunIt: a g7e pool (sm_120, which the default
// image has no code for) is refused at its profile's line when the stack's benchmark jobs would
// run the image there, and only warned about, at the same line, when benchmarks are off.
func TestTheDefaultImageIsRefusedOnlyWhereBenchmarksRunIt(t *testing.T) {
	stack := "config:\n  aws:region: us-east-1\n%s  gpucluster:pools:\n    - name: gpu\n      profile: g7e-efa\n"
	spec, err := parseAndDerive(t, fmt.Sprintf(stack, ""))
	if err != nil {
		t.Fatalf("g7e without benchmarks: %v, want a warning", err)
	}
	var warned bool
	for _, w := range spec.Warnings {
		if w.Line == 5 && w.Key == KeyPools+"[0].profile" && strings.Contains(w.Message, "compute capability 12.0") && strings.Contains(w.Message, "benchmarks are off") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("g7e without benchmarks: warnings %v, want one at line 5, %s[0].profile", spec.Warnings, KeyPools)
	}
	_, err = parseAndDerive(t, fmt.Sprintf(stack, "  gpucluster:benchmarks: {enabled: true}\n"))
	ces, ok := err.(ConfigErrors)
	if !ok || len(ces) != 1 || ces[0].Line != 6 || ces[0].Key != KeyPools+"[0].profile" || !strings.Contains(ces[0].Fix, "turn the stack's benchmarks off") {
		t.Errorf("g7e with benchmarks: %v, want one error at line 6, %s[0].profile", err, KeyPools)
	}
}

// TestUltraServerCapacityIsACapacityBlock: EKS runs GB200 UltraServers only from a Capacity
// Block [eks-ultra]; every other capacity is refused with the key and the fix.
func TestUltraServerCapacityIsACapacityBlock(t *testing.T) {
	for capacity, refused := range map[string]bool{"on-demand": true, "spot": true, "odcr": true, "capacity-block": false} {
		stack := "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n" +
			"    - {name: nvl, profile: gb200-nvl72, capacity: " + capacity + ", capacityReservationId: cr-0123456789abcdef0}\n"
		checkRefusal(t, "a GB200 pool on "+capacity+" capacity", stack, "set capacity: capacity-block", refused)
	}
}

// TestEveryPoolIsCheckedUnderTheStacksOwnImage: a stack's own training image excuses its pools
// from the default image's checks, not from the rest: a GB200 pool after another pool is still
// refused on a Kubernetes version EKS does not run UltraServers on.
func TestEveryPoolIsCheckedUnderTheStacksOwnImage(t *testing.T) {
	stack := "config:\n  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"1.32\"\n" +
		"  gpucluster:trainingImage: example.com/train:1\n" +
		"  gpucluster:pools:\n    - {name: gpu, profile: p5-efa}\n" +
		"    - {name: nvl, profile: gb200-nvl72, capacityReservationId: cr-0123456789abcdef0}\n"
	checkRefusal(t, "a GB200 pool after a p5 pool, the stack's own image, Kubernetes 1.32", stack, "pool nvl (p6e-gb200.36xlarge) needs Kubernetes 1.34 or newer", true)
}
