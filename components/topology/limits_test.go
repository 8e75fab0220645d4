package topology

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// moduleDir is where the build's copy of a module lies in the module cache (it is in go.mod,
// so the build has downloaded it already).
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

// The region list is pulumi-aws's own enum, read from the module the program deploys with.
func TestRegionsAreThoseOfPulumiAWS(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(moduleDir(t, "github.com/pulumi/pulumi-aws/sdk/v6"), "go/aws/pulumiEnums.go"))
	if err != nil {
		t.Fatal(err)
	}
	var upstream []string
	for _, m := range regexp.MustCompile(`(?m)^\tRegion\w+ += Region\("([a-z0-9-]+)"\)$`).FindAllStringSubmatch(string(src), -1) {
		upstream = append(upstream, m[1])
	}
	slices.Sort(upstream)
	if len(upstream) < 30 || !slices.Equal(upstream, awsRegions) {
		t.Errorf("regions differ from pulumi-aws:\n here     %v\n upstream %v", awsRegions, upstream)
	}
}

// Every GPU type of the catalog and the default system type are EC2 types the API knows.
func TestEC2InstanceTypeList(t *testing.T) {
	if len(ec2InstanceTypes) < 900 {
		t.Fatalf("only %d EC2 instance types", len(ec2InstanceTypes))
	}
	for _, it := range catalog.All() {
		if !KnownEC2InstanceType(it.Name) {
			t.Errorf("catalog type %s is not in the EC2 API's list", it.Name)
		}
	}
	if !KnownEC2InstanceType(DefaultSystemInstance) || KnownEC2InstanceType("m7i.lrage") {
		t.Error("system instance type check")
	}
}
