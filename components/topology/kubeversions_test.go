package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestKubernetesVersionsComeFromData holds the accepted versions to the data that bounds them:
// Karpenter's own supported range (karpenter-provider-aws pkg/providers/version, read
// from the module the test API server takes its CRDs from) and the version of that API server,
// which every object is created in; and each version's image to the pinned release.
func TestKubernetesVersionsComeFromData(t *testing.T) {
	mod, err := kubeapi.KarpenterModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(mod, "pkg/providers/version/version.go"))
	if err != nil {
		t.Fatal(err)
	}
	karpenter := func(name string) int {
		m := regexp.MustCompile(name + `\s*=\s*"1\.(\d+)"`).FindStringSubmatch(string(src))
		if m == nil {
			t.Fatalf("no %s in Karpenter's version.go", name)
		}
		return atoi(m[1])
	}
	if newest, max := NewestKubernetesMinor(), karpenter("MaxK8sVersion"); newest > max {
		t.Errorf("1.%d accepted, Karpenter %s supports up to 1.%d", newest, kubeapi.KarpenterVersion, max)
	}
	if oldest, min := OldestKubernetesMinor(), karpenter("MinK8sVersion"); oldest < min {
		t.Errorf("1.%d accepted, Karpenter %s supports from 1.%d", oldest, kubeapi.KarpenterVersion, min)
	}
	server := regexp.MustCompile(`^v1\.(\d+)\.`).FindStringSubmatch(kubeapi.KubernetesVersion)
	if server == nil || NewestKubernetesMinor() > atoi(server[1]) {
		t.Errorf("1.%d accepted, but the test API server is %s: objects would not be proven against it", NewestKubernetesMinor(), kubeapi.KubernetesVersion)
	}
	date := strings.TrimPrefix(AL2023Release, "v")
	for _, minor := range kubernetesMinors() {
		v := fmt.Sprintf("1.%d", minor)
		rel := NodeImageRelease(v)
		if !regexp.MustCompile(`^1\.` + fmt.Sprint(minor) + `\.\d+-` + date + `$`).MatchString(rel) {
			t.Errorf("%s: image release %q is not a %s kubelet of release %s", v, rel, v, AL2023Release)
		}
		if p, _ := kubernetesVersionProblem(v); p != "" {
			t.Errorf("%s refused: %s", v, p)
		}
		if StandardSupportEnds(v).IsZero() {
			t.Errorf("%s: no end of standard support: its control plane cannot be priced", v)
		}
		if _, retired := retiredKubernetes[minor]; retired {
			t.Errorf("%s is both accepted and retired", v)
		}
	}
	if got := KubectlImage("1.36"); got != "registry.k8s.io/kubectl:v1.36.2" {
		t.Errorf("kubectl for 1.36: %s", got)
	}
	if KarpenterAL2023Alias != "al2023@"+AL2023Release {
		t.Errorf("Karpenter's alias %s is not the pinned release %s", KarpenterAL2023Alias, AL2023Release)
	}
	if DefaultKubernetesVersion != fmt.Sprintf("1.%d", NewestKubernetesMinor()) {
		t.Errorf("default %s is not the newest accepted version", DefaultKubernetesVersion)
	}
}
