package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The EKS Kubernetes versions gpucluster accepts, and the node image release that serves them.
//
// Sources:
//
//	[eks-ami]   awslabs/amazon-eks-ami CHANGELOG.md, "AMI Release v20260714": AL2023 x86_64 and
//	            arm64 images, standard and NVIDIA, for Kubernetes 1.30 to 1.36 (release versions
//	            1.30.14-20260714 … 1.36.2-20260714); NVIDIA driver 580.159.03 ("580 driver for
//	            1.34+", amazon-eks-ami#2357, and for older versions #2484, #2496, #2503, #2509).
//	[eks-vers]  EKS user guide, "Understand the Kubernetes version lifecycle on EKS"
//	            (kubernetes-versions.adoc): end of extended support 1.30 2026-07-23, 1.31 2026-11-26.
//	[eks-cal]   EKS user guide, kubernetes-versions.adoc, the release calendar (awsdocs/amazon-eks-
//	            user-guide @8596db85 for 1.32 and 1.33; 1.34 to 1.36 from the same table as copied by
//	            endoflife-date/release-data releases/amazon-eks.json @ae4ee054, 2026-08-18): end of
//	            standard support 1.32 2026-03-23, 1.33 2026-07-29, 1.34 2026-12-02, 1.35 2027-03-27,
//	            1.36 2027-08-02; "Billing for extended support starts at the beginning of the day
//	            that the version reaches end of standard support, in the UTC+0 timezone."
//	[karpenter] karpenter-provider-aws v1.15.2 pkg/providers/version/version.go: MaxK8sVersion 1.37
//	            (read by kubeversions_test.go, with the test API server's version).

// AL2023Release is the amazon-eks-ami release every node image is pinned to: Karpenter's alias
// selects the image for the cluster's version from it, so it carries an image for every version
// below [eks-ami]. Managed node groups take the image EKS resolves for the cluster version.
const AL2023Release = "v20260714"

// KarpenterAL2023Alias pins the EKS AL2023 image Karpenter launches; Karpenter picks the image's
// NVIDIA variant for GPU types and the arm64 one for Graviton/Grace types.
const KarpenterAL2023Alias = "al2023@" + AL2023Release

// eksKubernetes maps each accepted minor version to its kubelet in the pinned release [eks-ami]:
// the versions EKS offers at the end of 2026 that the release and Karpenter [karpenter] serve.
var eksKubernetes = map[int]string{
	32: "1.32.13-20260714",
	33: "1.33.13-20260714",
	34: "1.34.9-20260714",
	35: "1.35.6-20260714",
	36: "1.36.2-20260714",
}

// standardSupportEnds is the day each accepted version leaves EKS standard support [eks-cal]: from
// that day (UTC) a cluster on it is in extended support, and billed for it, unless its upgrade
// policy is STANDARD (EKS then upgrades it to the next version instead).
var standardSupportEnds = map[int]string{
	32: "2026-03-23",
	33: "2026-07-29",
	34: "2026-12-02",
	35: "2027-03-27",
	36: "2027-08-02",
}

// StandardSupportEnds is the first day a version is in extended support (midnight UTC), or the
// zero time for a version gpucluster does not accept.
func StandardSupportEnds(version string) time.Time {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.DateOnly, standardSupportEnds[atoi(m[1])])
	return t
}

// retiredKubernetes are the versions EKS no longer creates clusters with [eks-vers], with the day
// their extended support ended, for an error that says why.
var retiredKubernetes = map[int]string{30: "2026-07-23", 31: "2026-11-26"}

// kubernetesMinors returns the accepted minor versions, oldest first.
func kubernetesMinors() []int {
	return slices.Sorted(maps.Keys(eksKubernetes))
}

// OldestKubernetesMinor and NewestKubernetesMinor bound the accepted versions (from eksKubernetes).
func OldestKubernetesMinor() int { return kubernetesMinors()[0] }
func NewestKubernetesMinor() int { ms := kubernetesMinors(); return ms[len(ms)-1] }

// DefaultKubernetesVersion is the newest accepted version.
var DefaultKubernetesVersion = fmt.Sprintf("1.%d", NewestKubernetesMinor())

// NodeImageRelease is the kubelet release of the pinned images for a Kubernetes version ("1.36"),
// or "" when the version is not accepted.
func NodeImageRelease(version string) string {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return ""
	}
	return eksKubernetes[atoi(m[1])]
}

// kubernetesVersionProblem explains why a version is not accepted ("" when it is), and the fix.
func kubernetesVersionProblem(version string) (problem, fix string) {
	var names []string
	for _, m := range kubernetesMinors() {
		names = append(names, fmt.Sprintf("1.%d", m))
	}
	fix = fmt.Sprintf("use one of %s (default %s)", strings.Join(names, ", "), DefaultKubernetesVersion)
	m := versionPattern.FindStringSubmatch(version)
	switch {
	case m == nil:
		return fmt.Sprintf("%q is not an EKS Kubernetes version (1.<minor>)", version), fix
	case eksKubernetes[atoi(m[1])] != "":
		return "", ""
	case retiredKubernetes[atoi(m[1])] != "":
		return fmt.Sprintf("%q left EKS extended support on %s: EKS no longer creates clusters with it", version, retiredKubernetes[atoi(m[1])]), fix
	case atoi(m[1]) > NewestKubernetesMinor():
		return fmt.Sprintf("%q is newer than 1.%d, the newest version the pinned node images (amazon-eks-ami %s) and Karpenter v1.15.2 serve and gpucluster's objects are validated against",
			version, NewestKubernetesMinor(), AL2023Release), fix
	}
	return fmt.Sprintf("%q is not a supported EKS Kubernetes version", version), fix
}

// KubectlImage is the Kubernetes project's kubectl image of the cluster's own release (the
// kubelet version of the pinned node images), so that kubectl is never outside its supported
// skew of one minor version from the API server.
func KubectlImage(version string) string {
	release, _, _ := strings.Cut(NodeImageRelease(version), "-")
	return "registry.k8s.io/kubectl:v" + release
}
