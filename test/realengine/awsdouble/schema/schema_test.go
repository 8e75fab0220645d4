package schema

import (
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/gpucluster/gpucluster/components/cluster"
	"github.com/gpucluster/gpucluster/test/harness"
)

// The two SDK versions the tier serves, written out: pulumi-eks v2.8.1's bundle
// (nodejs/eks/yarn.lock, which TestTheBundledVersionIsTheLocks holds to the harness's lock) and
// go.mod's. make harness downloads both.
const bundled, program = "6.45.0", "6.83.4"

func TestTheBundledVersionIsTheLocks(t *testing.T) {
	if v, err := harness.BundledNPMVersion("@pulumi/aws"); err != nil || v != bundled {
		t.Errorf("the harness installs @pulumi/aws %q (%v), these tests read the SDK at %s", v, err, bundled)
	}
	if cluster.PulumiEKSAWSProviderVersion != bundled || cluster.AWSProviderVersion != program {
		t.Errorf("the program says pulumi-eks's children ask for aws %s and its own resources for %s; these tests read %s and %s",
			cluster.PulumiEKSAWSProviderVersion, cluster.AWSProviderVersion, bundled, program)
	}
}

func load(t *testing.T, version string) *Schema {
	t.Helper()
	dir, err := SDKDir(version)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func resourceType(t *testing.T, s *Schema, tok string) *ObjectType {
	t.Helper()
	o, err := s.Resource(tok)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func reasons(fs []Failure) []string {
	var r []string
	for _, f := range fs {
		r = append(r, f.Reason)
	}
	return r
}

// eksCluster is what pulumi-eks registers for a cluster, less what a case changes.
func eksCluster() resource.PropertyMap {
	return resource.NewPropertyMapFromMap(map[string]any{
		"name": "gpu", "roleArn": "arn:aws:iam::123456789012:role/eks", "version": "1.36",
		"vpcConfig": map[string]any{"subnetIds": []any{"subnet-1", "subnet-2"}, "endpointPrivateAccess": true},
		"tags":      map[string]any{"Name": "gpu"},
	})
}

// TestUpgradePolicyExistsFromTheSDKThatHasIt: eks.Cluster's upgradePolicy is unknown at 6.45.0
// (its clusterArgs has no such field) and accepted at 6.83.4, as the bridge of each would.
func TestUpgradePolicyExistsFromTheSDKThatHasIt(t *testing.T) {
	in := eksCluster()
	in["upgradePolicy"] = resource.NewObjectProperty(resource.PropertyMap{"supportType": resource.NewStringProperty("STANDARD")})
	got := reasons(Check(resourceType(t, load(t, bundled), "aws:eks/cluster:Cluster"), "gpu-eksCluster", in))
	if want := []string{"Invalid or unknown key. Examine values at 'gpu-eksCluster.upgradePolicy'."}; !slices.Equal(got, want) {
		t.Errorf("at %s: %q, want %q", bundled, got, want)
	}
	if got := Check(resourceType(t, load(t, program), "aws:eks/cluster:Cluster"), "gpu-eksCluster", in); len(got) != 0 {
		t.Errorf("at %s: %v, want none", program, got)
	}
}

// TestCheckRefusesAsTheBridgeDoes: every kind of refusal, at the top and nested.
func TestCheckRefusesAsTheBridgeDoes(t *testing.T) {
	s := load(t, program)
	cluster := resourceType(t, s, "aws:eks/cluster:Cluster")
	nodeGroup := resourceType(t, s, "aws:eks/nodeGroup:NodeGroup")
	nodeGroupInputs := func() resource.PropertyMap {
		return resource.NewPropertyMapFromMap(map[string]any{
			"clusterName": "gpu", "nodeRoleArn": "arn:aws:iam::123456789012:role/node", "subnetIds": []any{"subnet-1"},
			"scalingConfig": map[string]any{"desiredSize": 2, "minSize": 2, "maxSize": 2},
			"taints":        []any{map[string]any{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}},
		})
	}
	for _, c := range []struct {
		name   string
		typ    *ObjectType
		inputs func() resource.PropertyMap
		edit   func(resource.PropertyMap)
		want   []string
	}{
		{"as registered", cluster, eksCluster, func(resource.PropertyMap) {}, nil},
		{"unknown top-level key", cluster, eksCluster, func(m resource.PropertyMap) { m["upgradePolicyy"] = resource.NewStringProperty("x") },
			[]string{"Invalid or unknown key. Examine values at 'r.upgradePolicyy'."}},
		{"unknown nested key", cluster, eksCluster, func(m resource.PropertyMap) {
			m["vpcConfig"].ObjectValue()["subnetIdz"] = resource.NewArrayProperty(nil)
		}, []string{"Invalid or unknown key. Examine values at 'r.vpcConfig.subnetIdz'."}},
		{"missing required", cluster, eksCluster, func(m resource.PropertyMap) { delete(m, "roleArn") },
			[]string{`Missing required argument. The argument "role_arn" is required, but no definition was found.. Examine values at 'r.roleArn'.`}},
		{"null required", cluster, eksCluster, func(m resource.PropertyMap) { m["vpcConfig"] = resource.NewNullProperty() },
			[]string{`Missing required argument. The argument "vpc_config" is required, but no definition was found.. Examine values at 'r.vpcConfig'.`}},
		{"unknown required passes", cluster, eksCluster, func(m resource.PropertyMap) {
			m["roleArn"] = resource.MakeComputed(resource.NewStringProperty(""))
		}, nil},
		{"missing nested required", nodeGroup, nodeGroupInputs, func(m resource.PropertyMap) { delete(m["scalingConfig"].ObjectValue(), "maxSize") },
			[]string{`Missing required argument. The argument "scaling_config.0.max_size" is required, but no definition was found.. Examine values at 'r.scalingConfig.maxSize'.`}},
		{"missing required in a list's object", nodeGroup, nodeGroupInputs, func(m resource.PropertyMap) { delete(m["taints"].ArrayValue()[0].ObjectValue(), "effect") },
			[]string{`Missing required argument. The argument "taints.0.effect" is required, but no definition was found.. Examine values at 'r.taints[0].effect'.`}},
		{"unknown key in a secret", nodeGroup, nodeGroupInputs, func(m resource.PropertyMap) {
			m["scalingConfig"] = resource.MakeSecret(resource.NewObjectProperty(resource.PropertyMap{"desiredSize": resource.NewNumberProperty(1),
				"minSize": resource.NewNumberProperty(1), "maxSize": resource.NewNumberProperty(1), "max": resource.NewNumberProperty(1)}))
		}, []string{"Invalid or unknown key. Examine values at 'r.scalingConfig.max'."}},
		{"a list where a string goes", nodeGroup, nodeGroupInputs, func(m resource.PropertyMap) { m["clusterName"] = resource.NewArrayProperty(nil) },
			[]string{"Inappropriate value: a string is required, not a list. Examine values at 'r.clusterName'."}},
		{"a string where a list goes", nodeGroup, nodeGroupInputs, func(m resource.PropertyMap) { m["subnetIds"] = resource.NewStringProperty("subnet-1") },
			[]string{"Inappropriate value: a array is required, not a string. Examine values at 'r.subnetIds'."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.inputs()
			c.edit(in)
			if got := reasons(Check(c.typ, "r", in)); !slices.Equal(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestEveryResourceOfTheSDKResolves: every resource token the SDK registers has a type, at both
// versions (no Go shape the reader does not know), and the required inputs are the constructor's.
func TestEveryResourceOfTheSDKResolves(t *testing.T) {
	for _, v := range []string{bundled, program} {
		s := load(t, v)
		for _, module := range []string{"", "eks", "iam", "ec2", "cloudwatch", "kms", "scheduler", "sqs"} {
			p, err := s.pkg(module)
			if err != nil {
				t.Fatal(err)
			}
			for tok := range p.constructors {
				if tok == "pulumi:providers:aws" {
					continue // the provider itself: its configuration, not a resource's inputs
				}
				if _, err := s.Resource(tok); err != nil {
					t.Errorf("%s: %v", v, err)
				}
			}
		}
		role := resourceType(t, s, "aws:iam/role:Role")
		if !role.Properties["assumeRolePolicy"].Required || role.Properties["name"].Required {
			t.Errorf("%s: iam.Role: assumeRolePolicy required %v, name required %v; want true, false", v,
				role.Properties["assumeRolePolicy"].Required, role.Properties["name"].Required)
		}
	}
	if _, err := load(t, program).Resource("aws:eks/cluster:Clusterr"); err == nil || !strings.Contains(err.Error(), "registers no resource") {
		t.Errorf("an unknown token: %v", err)
	}
}

// TestUnknownKeysOfARecord: a record's plain inputs, secrets and lists of objects looked into.
func TestUnknownKeysOfARecord(t *testing.T) {
	ng := resourceType(t, load(t, program), "aws:eks/nodeGroup:NodeGroup")
	got := UnknownKeys(ng, map[string]any{
		"clusterName": "gpu", "labels": map[string]any{"any": "key"},
		"scalingConfig": map[string]any{"secret": map[string]any{"minSize": 1, "min": 1}},
		"taints":        []any{map[string]any{"key": "k", "effect": "NO_SCHEDULE", "valu": "v"}},
		"tagz":          map[string]any{},
	})
	if want := []string{"scalingConfig.min", "tagz", "taints[0].valu"}; !slices.Equal(got, want) {
		t.Errorf("unknown keys %q, want %q", got, want)
	}
}
