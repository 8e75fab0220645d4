package topology

import (
	"slices"
	"strings"
	"testing"
)

// TestEKSImageRegistries spot-checks the table against rows of the EKS user guide's registry page
// (add-ons-images.html): the main account, the later regions' own accounts, GovCloud, China's
// domain.
func TestEKSImageRegistries(t *testing.T) {
	for region, want := range map[string]string{
		"us-west-2":      "602401143452.dkr.ecr.us-west-2.amazonaws.com",
		"af-south-1":     "877085696533.dkr.ecr.af-south-1.amazonaws.com",
		"ap-east-1":      "800184023465.dkr.ecr.ap-east-1.amazonaws.com",
		"ap-southeast-4": "491585149902.dkr.ecr.ap-southeast-4.amazonaws.com",
		"il-central-1":   "066635153087.dkr.ecr.il-central-1.amazonaws.com",
		"ca-west-1":      "761377655185.dkr.ecr.ca-west-1.amazonaws.com",
		"us-gov-west-1":  "013241004608.dkr.ecr.us-gov-west-1.amazonaws.com",
		"cn-north-1":     "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn",
	} {
		if got := EKSImageRegistry(region); got != want {
			t.Errorf("%s: registry %s, the EKS user guide lists %s", region, got, want)
		}
	}
	for region, want := range map[string]string{"us-east-1": "aws", "us-gov-east-1": "aws-us-gov", "cn-northwest-1": "aws-cn"} {
		if got := Partition(region); got != want {
			t.Errorf("%s: partition %s, want %s", region, got, want)
		}
	}
}

// TestRegionsBeyondTheTableAreRefused: of the regions pulumi-aws knows, those the registry table
// lacks (the isolated partitions) and those of unverified partitions are refused, each saying why;
// the commercial and GovCloud regions of the table are deployable.
func TestRegionsBeyondTheTableAreRefused(t *testing.T) {
	for r, want := range map[string]string{
		"us-iso-east-1": "has no EKS image registry", "us-isob-east-1": "has no EKS image registry",
		"eu-isoe-west-1": "has no EKS image registry", "cn-north-1": "aws-cn partition", "cn-northwest-1": "aws-cn partition",
	} {
		if p := regionProblem(r); !strings.Contains(p, want) {
			t.Errorf("%s: %q, want a refusal saying %q", r, p, want)
		}
	}
	deployable := deployableRegions()
	for _, r := range []string{"us-east-1", "af-south-1", "il-central-1", "us-gov-west-1"} {
		if !slices.Contains(deployable, r) {
			t.Errorf("%s is not deployable", r)
		}
	}
	if len(deployable) < 30 {
		t.Errorf("only %d deployable regions", len(deployable))
	}
}
