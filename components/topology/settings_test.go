package topology

import (
	"fmt"
	"strings"
	"testing"
)

func TestSettingsDefaultsAndZoneResolution(t *testing.T) {
	yaml := `config:
  aws:region: us-west-2
  gpucluster:pools:
    - {name: train, profile: p5-efa}
    - {name: dev, profile: dev}
    - {name: b, profile: g6e-efa, availabilityZones: [us-west-2b]}
`
	st, err := ParseStack("stacks/Pulumi.bench-1.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := DeriveStack(st, planDay)
	if err != nil {
		t.Fatal(err)
	}
	c, v := spec.Cluster, spec.VPC
	if spec.Stack != "bench-1" || spec.Region != "us-west-2" || c.Name != "bench-1" || c.KubernetesVersion != DefaultKubernetesVersion ||
		!c.EndpointPrivateAccess || len(c.LogTypes) != 5 || c.SystemNodes != (SystemNodes{DefaultSystemInstance, DefaultSystemNodes}) {
		t.Errorf("cluster defaults: %+v", c)
	}
	if !v.Create || v.CIDR != DefaultVPCCIDR || fmt.Sprint(v.AvailabilityZones) != "[us-west-2a us-west-2b]" {
		t.Errorf("vpc defaults: %+v", v)
	}
	zones := map[string]string{}
	for _, p := range spec.Pools {
		zones[p.Name] = fmt.Sprint(p.AvailabilityZones)
	}
	// Every pool gets one zone unless it lists its own; an explicit zone is kept.
	want := map[string]string{"train": "[us-west-2a]", "dev": "[us-west-2a]", "b": "[us-west-2b]"}
	if fmt.Sprint(zones) != fmt.Sprint(want) {
		t.Errorf("zones %v, want %v", zones, want)
	}
}

func TestExistingVPC(t *testing.T) {
	yaml := `config:
  aws:region: us-east-1
  gpucluster:vpcId: vpc-0123456789abcdef0
  gpucluster:privateSubnets: {us-east-1c: subnet-0123456789abcdef0, us-east-1d: subnet-0123456789abcdef1}
  gpucluster:publicSubnets: {us-east-1c: subnet-0123456789abcdef2}
  gpucluster:clusterName: research
  gpucluster:endpointPublicAccess: false
  gpucluster:adminRoleArns: [arn:aws:iam::123456789012:role/admin]
  gpucluster:systemNodes: {instanceType: m7i.xlarge, count: 3}
  gpucluster:pools:
    - {name: p5, profile: p5-efa, availabilityZones: [us-east-1d]}
`
	st, err := ParseStack("stacks/Pulumi.x.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if st.VPC.Create || st.VPC.VPCID != "vpc-0123456789abcdef0" || fmt.Sprint(st.VPC.AvailabilityZones) != "[us-east-1c us-east-1d]" ||
		st.Cluster.Name != "research" || st.Cluster.EndpointPublicAccess || st.Cluster.SystemNodes.Count != 3 {
		t.Errorf("settings: %+v %+v", st.Cluster, st.VPC)
	}
}

func TestSettingsErrors(t *testing.T) {
	pools := "  gpucluster:pools: [{name: a, profile: dev}]\n"
	cases := []struct {
		config   string // lines under config:, before the pools line
		line     int
		key, msg string
	}{
		{"  aws:region: us-east\n", 2, "aws:region", `"us-east" is not an AWS region name`},
		{"  aws:region: us-iso-east-1\n", 2, "aws:region", "has no EKS image registry in the EKS user guide's table"},
		{"  aws:region: cn-north-1\n", 2, "aws:region", "is in the aws-cn partition"},
		{"  aws:region: us-east-1\n  gpucluster:clusterName: My_Cluster\n", 3, "gpucluster:clusterName", `cluster name "My_Cluster"`},
		{"  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"1.27\"\n", 3, "gpucluster:kubernetesVersion", `"1.27" is not a supported`},
		{"  aws:region: us-east-1\n  gpucluster:publicAccessCidrs: [10.0.0.0/33]\n", 3, "gpucluster:publicAccessCidrs[0]", "is not a CIDR"},
		{"  aws:region: us-east-1\n  gpucluster:publicAccessCidrs: []\n", 3, "gpucluster:publicAccessCidrs", "needs at least one allowed CIDR"},
		{"  aws:region: us-east-1\n  gpucluster:adminRoleArns: [admin]\n", 3, "gpucluster:adminRoleArns[0]", "is not an IAM role or user ARN"},
		{"  aws:region: us-east-1\n  gpucluster:adminRoleArns: [\"arn:aws:iam::111122223333:role/Admin\", \"arn:aws:iam::111122223333:role/ops/admin\"]\n", 3, "gpucluster:adminRoleArns[1]", "is listed twice"},
		{"  aws:region: us-east-1\n  gpucluster:systemNodes: {count: 0}\n", 3, "gpucluster:systemNodes.count", "CoreDNS and the Karpenter controller"},
		{"  aws:region: us-east-1\n  gpucluster:systemNodes: {size: 2}\n", 3, "gpucluster:systemNodes.size", "unknown key"},
		{"  aws:region: us-east-1\n  gpucluster:endpointPublicAccess: yes\n", 3, "gpucluster:endpointPublicAccess", `"yes" is not true or false`},
		{"  aws:region: us-east-1\n  gpucluster:vpcCidr: 10.0.0.0/24\n", 3, "gpucluster:vpcCidr", "a /24 VPC cannot hold"},
		{"  aws:region: us-east-1\n  gpucluster:availabilityZones: [us-east-1a]\n", 3, "gpucluster:availabilityZones", "at least two Availability Zones; 1 given"},
		{"  aws:region: us-east-1\n  gpucluster:availabilityZones: [us-east-1a, us-west-2a]\n", 3, "gpucluster:availabilityZones[1]", `"us-west-2a" is not a zone of region us-east-1`},
		{"  aws:region: us-east-1\n  gpucluster:privateSubnets: {us-east-1a: subnet-0123456789abcdef0}\n", 3, "gpucluster:privateSubnets", "no gpucluster:vpcId is set"},
		{"  aws:region: us-east-1\n  gpucluster:vpcId: vpc-0123456789abcdef0\n  gpucluster:vpcCidr: 10.0.0.0/16\n", 4, "gpucluster:vpcCidr", "only applies to a VPC gpucluster creates"},
		{"  aws:region: us-east-1\n  gpucluster:vpcId: vpc-0123456789abcdef0\n  gpucluster:privateSubnets: {us-east-1a: subnet-0123456789abcdef0}\n", 4, "gpucluster:privateSubnets", "1 private subnet(s) given"},
		{"  aws:region: us-east-1\n  gpucluster:vpcId: vpc-0123456789abcdef0\n  gpucluster:privateSubnets: {us-east-1a: subnet-1, us-east-1b: subnet-0123456789abcdef0}\n", 4, "gpucluster:privateSubnets.us-east-1a", `"subnet-1" is not a subnet id`},
		{"  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"1.34\"\n  gpucluster:kubernetesVersion: \"1.33\"\n", 4, "gpucluster:kubernetesVersion", "set twice"},
	}
	for _, c := range cases {
		errs := parseErrors(t, "config:\n"+c.config+pools)
		found := false
		for _, e := range errs {
			found = found || (e.Key == c.key && e.Line == c.line && strings.Contains(e.Message, c.msg))
		}
		if !found {
			t.Errorf("config %q: want %d %s …%s…, got %v", c.config, c.line, c.key, c.msg, errs)
		}
	}
}

func TestPoolZoneMustBeAVPCZone(t *testing.T) {
	errs := parseErrors(t, "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - name: a\n      profile: p5-efa\n      availabilityZones: [us-east-1f]\n")
	if len(errs) != 1 || errs[0].Key != "gpucluster:pools[0].availabilityZones[0]" || errs[0].Line != 6 ||
		!strings.Contains(errs[0].Message, `zone "us-east-1f" has no subnet in this stack's VPC`) {
		t.Errorf("got %v", errs)
	}
}

// TestKarpenterReplicasFitTheSystemNodes: never more controllers than system nodes (each needs
// its own), never more than the chart's two.
func TestKarpenterReplicasFitTheSystemNodes(t *testing.T) {
	for nodes, want := range map[int]int{1: 1, 2: 2, 3: 2, 10: 2} {
		if got := (SystemNodes{Count: nodes}).KarpenterReplicas(); got != want {
			t.Errorf("%d system nodes: %d Karpenter replicas, want %d", nodes, got, want)
		}
	}
}

func TestPrincipalIdentity(t *testing.T) {
	for _, same := range [][2]string{
		{"arn:aws:iam::111122223333:role/Admin", "arn:aws:sts::111122223333:assumed-role/admin/alice@example.com"},
		{"arn:aws:iam::111122223333:role/team/Admin", "arn:aws:iam::111122223333:role/admin"},
		{"arn:aws-us-gov:iam::111122223333:user/Bob", "arn:aws-us-gov:iam::111122223333:user/bob"},
	} {
		if PrincipalIdentity(same[0]) != PrincipalIdentity(same[1]) {
			t.Errorf("%s and %s are one principal: %s vs %s", same[0], same[1], PrincipalIdentity(same[0]), PrincipalIdentity(same[1]))
		}
	}
	for _, other := range [][2]string{
		{"arn:aws:iam::111122223333:role/Admin", "arn:aws:iam::444455556666:role/Admin"},
		{"arn:aws:iam::111122223333:role/Admin", "arn:aws:iam::111122223333:user/Admin"},
	} {
		if PrincipalIdentity(other[0]) == PrincipalIdentity(other[1]) {
			t.Errorf("%s and %s are different principals", other[0], other[1])
		}
	}
}
