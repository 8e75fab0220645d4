package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const file = "stacks/Pulumi.test.yaml"

func parseErrors(t *testing.T, yaml string) ConfigErrors {
	t.Helper()
	_, err := ParseStack(file, []byte(yaml))
	if err == nil {
		return nil
	}
	var ces ConfigErrors
	if !errors.As(err, &ces) {
		t.Fatalf("error is %T, want ConfigErrors: %v", err, err)
	}
	for _, e := range ces {
		if e.File != file || e.Key == "" || e.Message == "" || e.Fix == "" {
			t.Errorf("incomplete error (every error names file, key, message and fix): %+v", e)
		}
	}
	return ces
}

func TestValidStackWithTwoPools(t *testing.T) {
	yaml := `config:
  aws:region: us-east-1
  gpucluster:pools:
    - name: train
      profile: p5-efa
      nodes: 4
      availabilityZones: [us-east-1a]
      labels: {team: ml}
      ncclEnv: {NCCL_DEBUG: WARN}
      taints:
        - {key: example.com/dedicated, value: training, effect: NoSchedule}
      tolerations:
        - {key: example.com/dedicated, operator: Equal, value: training, effect: NoSchedule}
    - name: infer
      profile: g6e-efa
      instanceType: g6e.48xlarge
      minNodes: 0
      maxNodes: 3
`
	st, err := ParseStack(file, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := DeriveStack(st, planDay)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Pools) != 2 {
		t.Fatalf("%d pools", len(spec.Pools))
	}
	train, infer := spec.Pools[0], spec.Pools[1]
	if train.Scaling.MinNodes != 4 || train.Scaling.MaxNodes != 4 || train.Labels["team"] != "ml" || len(train.Taints) != 2 {
		t.Errorf("train overrides not applied: %+v %v %v", train.Scaling, train.Labels, train.Taints)
	}
	if train.TrainingPod.Env[0].Value != "WARN" {
		t.Errorf("ncclEnv override lost: %+v", train.TrainingPod.Env)
	}
	if infer.Instance.Name != "g6e.48xlarge" || infer.Network.EFAInterfaces != 4 || infer.Scaling.MinNodes != 0 || infer.Scaling.MaxNodes != 3 {
		t.Errorf("infer: %s %d EFA %+v", infer.Instance.Name, infer.Network.EFAInterfaces, infer.Scaling)
	}
	// Overriding a pool never changes the built-in it started from.
	if p, _ := BuiltinProfile("p5-efa"); p.MinNodes != 2 || p.Labels != nil || p.Taints != nil {
		t.Errorf("built-in p5-efa changed: %+v", p)
	}
}

// TestEveryBadInputNamesFileLineKeyAndFix covers each validation rule of the issue.
func TestEveryBadInputNamesFileLineKeyAndFix(t *testing.T) {
	cases := []struct {
		name, pool string // pool keys, indented under "- name: p" at line 3
		line       int
		key, msg   string
	}{
		{"unknown profile", "profile: p5-efaa", 4, "pools[0].profile", `unknown profile "p5-efaa" (did you mean "p5-efa"?)`},
		{"unknown instance type", "profile: p5-efa\n      instanceType: p5.48xl", 5, "pools[0].instanceType", `unknown instance type "p5.48xl"`},
		{"efa on a type without efa", "profile: g6e-efa\n      instanceType: g6e.4xlarge", 5, "pools[0].fabric", "g6e.4xlarge does not support EFA"},
		{"more efa than cards", "profile: p4d-efa\n      efaInterfaces: 8", 5, "pools[0].efaInterfaces", "takes at most 4 EFA interfaces (one per EFA network card"},
		{"cluster placement across zones", "profile: p5-efa\n      availabilityZones: [us-east-1a, us-east-1b]", 5, "pools[0].availabilityZones", "a cluster placement group lives in one Availability Zone"},
		{"efa across zones", "profile: p5-efa\n      placement: none\n      availabilityZones: [us-east-1a, us-east-1b]", 6, "pools[0].availabilityZones", "EFA traffic stays inside one subnet"},
		{"capacity block without id", "profile: p5-efa\n      capacity: capacity-block", 5, "pools[0].capacityReservationId", "needs the id of the reservation"},
		{"odcr without id", "profile: p5-efa\n      capacity: odcr", 5, "pools[0].capacityReservationId", "needs the id of the reservation"},
		{"malformed reservation id", "profile: p5-efa\n      capacity: odcr\n      capacityReservationId: cr-xyz", 6, "pools[0].capacityReservationId", "is not a capacity reservation id"},
		{"placement forced on reserved capacity", "profile: p5-efa\n      capacity: capacity-block\n      capacityReservationId: cr-0123456789abcdef0\n      placement: cluster", 7, "pools[0].placement", "already placed by AWS"},
		// An ODCR made in a cluster placement group names the group; only an ODCR may.
		{"reservation group on a capacity block", "profile: p5-efa\n      capacity: capacity-block\n      capacityReservationId: cr-0123456789abcdef0\n      placementGroupName: my-cpg", 7, "pools[0].placementGroupName", "only for an On-Demand Capacity Reservation"},
		{"reservation group on demand", "profile: p5-efa\n      placementGroupName: my-cpg", 5, "pools[0].placementGroupName", `(capacity is "on-demand")`},
		{"reservation group in a partition group", "profile: p5-efa\n      capacity: odcr\n      capacityReservationId: cr-0123456789abcdef0\n      placementGroupName: my-cpg\n      placement: partition\n      partitions: 2", 8, "pools[0].placement", "only in a cluster placement group"},
		{"reservation group across zones", "profile: p5-efa\n      capacity: odcr\n      capacityReservationId: cr-0123456789abcdef0\n      placementGroupName: my-cpg\n      placement: none\n      availabilityZones: [us-east-1a, us-east-1b]", 9, "pools[0].availabilityZones", "in one Availability Zone; 2 were given"},
		{"reservation group name not ASCII", "profile: p5-efa\n      capacity: odcr\n      capacityReservationId: cr-0123456789abcdef0\n      placementGroupName: grüppe", 7, "pools[0].placementGroupName", "is not a placement group name"},
		{"zero nodes", "profile: p5-efa\n      nodes: 0", 5, "pools[0].nodes", "node count 0 is below 1"},
		{"min above max", "profile: p5-efa\n      minNodes: 5\n      maxNodes: 2", 5, "pools[0].minNodes", "minNodes 5 is greater than maxNodes 2"},
		{"nodes and range", "profile: p5-efa\n      nodes: 2\n      maxNodes: 4", 5, "pools[0].nodes", "both set"},
		{"nodes not a number", "profile: p5-efa\n      nodes: two", 5, "pools[0].nodes", `"two" is not a whole number`},
		{"unparseable shm", "profile: p5-efa\n      shmSize: 64GB", 5, "pools[0].shmSize", `cannot parse "64GB"`},
		{"non-positive shm", "profile: p5-efa\n      shmSize: \"0\"", 5, "pools[0].shmSize", "is not positive"},
		{"shm above node memory", "profile: dev\n      shmSize: 64Gi", 5, "pools[0].shmSize", "does not fit in the 32 GiB"},
		{"pod per gpu with fewer efa than gpus", "profile: p4d-efa\n      podLayout: pod-per-gpu", 5, "pools[0].podLayout", "4 EFA devices for 8 one-GPU pods"},
		{"pod per gpu, too many pods", "profile: p4d-pod-per-gpu\n      podsPerNode: 6", 5, "pools[0].podsPerNode", "4 EFA devices for 6 one-GPU pods"},
		{"taint without toleration", "profile: p5-efa\n      taints: [{key: example.com/team, value: a, effect: NoExecute}]", 5, "pools[0].taints[0]", "no toleration matches taint example.com/team=a:NoExecute"},
		{"bad taint effect", "profile: p5-efa\n      taints: [{key: a, effect: NoScheduel}]", 5, "pools[0].taints[0].effect", `unknown taint effect "NoScheduel"`},
		{"unknown pool key", "profile: p5-efa\n      efaInterface: 4", 5, "pools[0].efaInterface", `unknown key (did you mean "efaInterfaces"?)`},
		{"unknown taint key", "profile: p5-efa\n      taints: [{key: a, efect: NoSchedule}]", 5, "pools[0].taints[0].efect", `unknown key (did you mean "effect"?)`},
		{"duplicate key", "profile: p5-efa\n      nodes: 2\n      nodes: 3", 6, "pools[0].nodes", "set twice"},
		{"fabric manager daemonset on host fm image", "profile: p5-efa\n      fabricManager: daemonset", 5, "pools[0].fabricManager", "already runs nv-fabricmanager"},
		{"fabric manager daemonset without nvswitch", "profile: g6e-efa\n      amiFamily: custom\n      amiId: ami-0123456789abcdef0\n      fabricManager: daemonset", 7, "pools[0].fabricManager", "has no NVSwitch"},
		{"custom ami without id", "profile: p4d-efa\n      amiFamily: custom", 5, "pools[0].amiId", "needs an amiId"},
		{"karpenter with a minimum", "profile: karpenter-p5\n      minNodes: 2", 5, "pools[0].minNodes", "keeps no minimum"},
		{"reserved label", "profile: p5-efa\n      labels: {node-role.kubernetes.io/gpu: \"\"}", 5, "pools[0].labels.node-role.kubernetes.io/gpu", "kubelet refuses"},
		{"bad pool name", "profile: p5-efa", 3, "pools[0].name", `pool name "P" cannot be used`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "p"
			if c.name == "bad pool name" {
				name = "P"
			}
			yaml := "config:\n  gpucluster:pools:\n    - name: " + name + "\n      " + c.pool + "\n  aws:region: us-east-1\n"
			errs := parseErrors(t, yaml)
			for _, e := range errs {
				if e.Key == KeyPools+strings.TrimPrefix(c.key, "pools") && e.Line == c.line && strings.Contains(e.Message, c.msg) {
					return
				}
			}
			t.Errorf("want %s:%d %s: …%s…\ngot %v", file, c.line, c.key, c.msg, errs)
		})
	}
}

func TestAllErrorsOfAFileAreReportedTogether(t *testing.T) {
	yaml := `config:
  gpucluster:pool: []
  gpucluster:pools:
    - name: a
      profile: p4d-efa
      efaInterfaces: 9
      shmSize: lots
    - name: b
      profile: nope
    - name: a
      profile: dev
  aws:region: us-east-1
`
	errs := parseErrors(t, yaml)
	var got []string
	for _, e := range errs {
		got = append(got, e.Key)
	}
	want := []string{"gpucluster:pool", "gpucluster:pools[0].efaInterfaces", "gpucluster:pools[0].shmSize",
		"gpucluster:pools[1].profile", "gpucluster:pools[2].name"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("keys %v\nwant %v", got, want)
	}
	if !strings.Contains(errs[0].Message, `did you mean "gpucluster:pools"`) {
		t.Errorf("typo not suggested: %v", errs[0])
	}
	if s := errs.Error(); !strings.HasPrefix(s, "5 error(s):") || !strings.Contains(s, file+":6: gpucluster:pools[0].efaInterfaces") {
		t.Errorf("error text: %s", s)
	}
}

func TestFileLevelErrors(t *testing.T) {
	cases := map[string]string{
		"":                                   "the file is empty",
		"config: {a: b":                      "fix the YAML syntax",
		"- 1":                                "expected a mapping",
		"config:\n  aws:region: us-east-1\n": "declares no GPU pool",
		"config:\n  gpucluster:pools: [{name: a, profile: dev}]\n": "the stack names no AWS region",
		"config:\n  gpucluster:pools: []\n":                        "pool list is empty",
		"config:\n  gpucluster:pools: x\n":                         "expected a list of pools",
		"config:\n  pools: []\n":                                   "config keys are namespaced",
		"configs: {}\n":                                            `did you mean "config"`,
		"config:\n  gpucluster:pools:\n  - 3":                      "expected a pool mapping",
		"config:\n  gpucluster:pools:\n  - name: x\n":              "names no profile",
	}
	for in, want := range cases {
		errs := parseErrors(t, in)
		if len(errs) == 0 || !strings.Contains(errs.Error(), want) {
			t.Errorf("%q: got %v, want …%s…", in, errs, want)
		}
	}
}

func TestLoadStackReadsAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "Pulumi.x.yaml")
	if err := os.WriteFile(path, []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: gpu, profile: dev}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadStack(path, planDay)
	if err != nil || len(spec.Pools) != 1 || spec.Source != path {
		t.Fatalf("spec %+v err %v", spec, err)
	}
	if _, err := LoadStack(filepath.Join(dir, "missing.yaml"), planDay); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// TestPoolsMustFitTheirSubnets: a pool whose nodes cannot all get addresses in its zone's private
// subnet is refused at the line of its size; the same pool in a larger VPC is accepted.
func TestPoolsMustFitTheirSubnets(t *testing.T) {
	file := "config:\n  aws:region: us-east-1\n  gpucluster:vpcCidr: %s\n  gpucluster:pools:\n    - name: gpu\n      profile: p5-efa\n      nodes: %d\n"
	_, err := parseAndDerive(t, fmt.Sprintf(file, "10.0.0.0/20", 100))
	ces, ok := err.(ConfigErrors)
	if !ok || len(ces) != 1 || ces[0].Key != KeyPools+"[0].nodes" || ces[0].Line != 7 || !strings.Contains(ces[0].Message, "private subnet (a /23 of 10.0.0.0/20) has 507") {
		t.Fatalf("100 p5 nodes in a /20: %v", err)
	}
	if _, err := parseAndDerive(t, fmt.Sprintf(file, "10.0.0.0/16", 100)); err != nil {
		t.Errorf("100 p5 nodes in a /16: %v", err)
	}
	if _, err := parseAndDerive(t, fmt.Sprintf(file, "10.0.0.0/16", 100000)); err == nil {
		t.Error("100000 nodes in a /16 accepted")
	}
}

func parseAndDerive(t *testing.T, data string) (StackSpec, error) {
	t.Helper()
	st, err := ParseStack("stacks/Pulumi.x.yaml", []byte(data))
	if err != nil {
		return StackSpec{}, err
	}
	return DeriveStack(st, planDay)
}
