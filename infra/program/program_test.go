package program

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
)

// evaluation is one stack run under the offline engine.
type evaluation struct {
	t      *testing.T
	spec   topology.StackSpec
	res    []offline.Resource
	d      *Deployment
	secret bool // the kubeconfig output is secret
}

func stackFiles(t *testing.T) []string {
	files, err := filepath.Glob("../../stacks/Pulumi.*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no stack files: %v", err)
	}
	return files
}

func evaluate(t *testing.T, file string) *evaluation {
	t.Helper()
	spec, err := topology.LoadStack(file, testDay)
	if err != nil {
		t.Fatal(err)
	}
	ev := &evaluation{t: t, spec: spec}
	engine := offline.NewEngine(spec.Stack)
	err = engine.Run(func(ctx *pulumi.Context) error {
		record, err := checkDeployedPools(ctx, spec, false)
		if err != nil {
			return err
		}
		d, err := Build(ctx, spec)
		if err != nil {
			return err
		}
		for k, v := range outputs(d, record, false) {
			ctx.Export(k, v)
		}
		ev.d = d
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	ev.res = engine.Resources()
	ev.secret = pulumi.IsSecret(ev.d.Cluster.Kubeconfig)
	return ev
}

func (ev *evaluation) ofType(typ string) []offline.Resource { return ofType(ev.res, typ) }

// poolChildren are the resources parented to a pool's NodePool component.
func (ev *evaluation) poolChildren(pool, typ string) []offline.Resource {
	var component string
	for _, r := range ev.ofType("gpucluster:index:NodePool") {
		if r.Name == ev.spec.Cluster.Name+"-"+pool {
			component = r.URN
		}
	}
	if component == "" {
		ev.t.Fatalf("no NodePool component for pool %s", pool)
	}
	var out []offline.Resource
	for _, r := range ev.res {
		if r.Parent == component && r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

func (ev *evaluation) byID(id string) offline.Resource {
	for _, r := range ev.res {
		if r.ID == id {
			return r
		}
	}
	ev.t.Fatalf("no resource with id %s", id)
	return offline.Resource{}
}

// dependsOn says whether the engine recorded on as a dependency of r.
func dependsOn(r, on offline.Resource) bool {
	for _, d := range r.Dependencies {
		if d == on.URN {
			return true
		}
	}
	return false
}

func one(t *testing.T, rs []offline.Resource, what string) offline.Resource {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("%d %s, want 1", len(rs), what)
	}
	return rs[0]
}

func str(v any) string { return fmt.Sprint(v) }

func TestEveryStackEvaluatesOffline(t *testing.T) {
	for _, file := range stackFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ev := evaluate(t, file)
			checkComponents(t, ev)
			checkControlPlane(t, ev)
			for _, pool := range ev.spec.Pools {
				checkPool(t, ev, pool)
			}
		})
	}
}

func checkComponents(t *testing.T, ev *evaluation) {
	one(t, ev.ofType("gpucluster:index:Network"), "networks")
	one(t, ev.ofType("gpucluster:index:Cluster"), "clusters")
	if n := len(ev.ofType("gpucluster:index:NodePool")); n != len(ev.spec.Pools) {
		t.Errorf("%d NodePool components for %d pools", n, len(ev.spec.Pools))
	}
	// Every cloud resource is a child of one of gpucluster's components.
	types := map[string]string{}
	for _, r := range ev.res {
		types[r.URN] = r.Type
	}
	for _, r := range ev.res {
		if strings.HasPrefix(r.Type, "gpucluster:index:") {
			continue
		}
		if !strings.HasPrefix(types[r.Parent], "gpucluster:index:") {
			t.Errorf("%s %s is not parented to a gpucluster component (parent %q)", r.Type, r.Name, r.Parent)
		}
	}
	if !ev.secret {
		t.Error("the kubeconfig output is not secret")
	}
}

func checkControlPlane(t *testing.T, ev *evaluation) {
	s := ev.spec.Cluster
	eks := one(t, ev.ofType("eks:index:Cluster"), "EKS clusters")
	key := one(t, ev.ofType("aws:kms/key:Key"), "KMS keys")
	want := map[string]string{
		"name": s.Name, "version": s.KubernetesVersion, "skipDefaultNodeGroup": "true", "authenticationMode": "API",
		"createOidcProvider": "false", "endpointPrivateAccess": "true", "endpointPublicAccess": str(s.EndpointPublicAccess),
		"useDefaultVpcCni": "true", "nodeAssociatePublicIpAddress": "false", "kubernetesServiceIpAddressRange": s.ServiceCIDR,
		"enabledClusterLogTypes": str([]any{"api", "audit", "authenticator", "controllerManager", "scheduler"}),
	}
	for k, v := range want {
		if got := str(eks.Input(k)); got != v {
			t.Errorf("EKS %s = %s, want %s", k, got, v)
		}
	}
	if key.Input("enableKeyRotation") != true {
		t.Error("KMS key rotation is off")
	}
	// Secrets are encrypted with that key: the cluster takes the key's ARN (a value only the
	// key yields, so the engine records the key as a dependency of the cluster).
	if eks.Input("encryptionConfigKeyArn") == nil || !dependsOn(eks, key) {
		t.Errorf("the cluster's secrets key is not the KMS key's ARN: %v, dependencies %v", eks.Input("encryptionConfigKeyArn"), eks.Dependencies)
	}
	// The node role has exactly the managed policies nodes need.
	var policies []string
	for _, a := range ev.ofType("aws:iam/rolePolicyAttachment:RolePolicyAttachment") {
		if a.Input("role") == s.Name+"-node" {
			policies = append(policies, str(a.Input("policyArn")))
		}
	}
	sort.Strings(policies)
	// Exactly these three (EKS user guide, "Amazon EKS node IAM role"); stated here, not read
	// from the code under test.
	// The partition is written out too: every stack in stacks/ is in a commercial region
	// (partition aws); a stack in another partition fails here until the test knows it.
	var want3 []string
	for _, p := range []string{"AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly", "AmazonEKS_CNI_Policy"} {
		want3 = append(want3, "arn:aws:iam::aws:policy/"+p)
	}
	sort.Strings(want3)
	if strings.Join(policies, " ") != strings.Join(want3, " ") {
		t.Errorf("node role policies %v, want %v", policies, want3)
	}
	// The system node group: untainted, on-demand, in every private subnet.
	var system *offline.Resource
	for _, ng := range ev.ofType("aws:eks/nodeGroup:NodeGroup") {
		if ng.Input("nodeGroupName") == s.Name+"-system" {
			system = &ng
		}
	}
	if system == nil {
		t.Fatal("no system node group")
	}
	scaling := system.Input("scalingConfig").(map[string]any)
	if scaling["desiredSize"] != float64(s.SystemNodes.Count) || system.Input("taints") != nil ||
		len(system.Input("subnetIds").([]any)) != len(ev.spec.VPC.AvailabilityZones) {
		t.Errorf("system node group %v", system.Inputs)
	}
}

func checkPool(t *testing.T, ev *evaluation, pool topology.PoolSpec) {
	t.Run(pool.Name, func(t *testing.T) {
		base := ev.spec.Cluster.Name + "-" + pool.Name
		groups := ev.poolChildren(pool.Name, "aws:ec2/placementGroup:PlacementGroup")
		if pool.Placement.Strategy == topology.PlacementNone {
			if len(groups) != 0 {
				t.Errorf("placement %s, yet %d placement groups", pool.Placement.Strategy, len(groups))
			}
		} else {
			pg := one(t, groups, "placement groups")
			if pg.Input("strategy") != string(pool.Placement.Strategy) || pg.Input("name") != base {
				t.Errorf("placement group %v", pg.Inputs)
			}
		}

		efaSGs := ev.poolChildren(pool.Name, "aws:ec2/securityGroup:SecurityGroup")
		rules := ev.poolChildren(pool.Name, "aws:ec2/securityGroupRule:SecurityGroupRule")
		var efaSG string
		if pool.Network.EFAInterfaces > 0 {
			efaSG = one(t, efaSGs, "EFA security groups").ID
			dirs := map[string]bool{}
			for _, r := range rules {
				if r.Input("self") != true || r.Input("protocol") != "-1" || r.Input("securityGroupId") != efaSG {
					t.Errorf("EFA rule is not all-traffic-to-self: %v", r.Inputs)
				}
				dirs[str(r.Input("type"))] = true
			}
			if !dirs["ingress"] || !dirs["egress"] || len(rules) != 2 {
				t.Errorf("EFA security group needs ingress AND egress to itself: %v", dirs)
			}
		} else if len(efaSGs)+len(rules) != 0 {
			t.Errorf("pool without EFA has an EFA security group")
		}

		lts := ev.poolChildren(pool.Name, "aws:ec2/launchTemplate:LaunchTemplate")
		ngs := ev.poolChildren(pool.Name, "aws:eks/nodeGroup:NodeGroup")
		if pool.Provisioner == topology.ProvisionerKarpenter {
			if len(lts)+len(ngs) != 0 {
				t.Errorf("Karpenter pool has %d launch templates and %d node groups", len(lts), len(ngs))
			}
			return
		}
		lt := one(t, lts, "launch templates")
		checkLaunchTemplate(t, ev, pool, lt, efaSG, groups)
		checkNodeGroup(t, ev, pool, one(t, ngs, "node groups"), lt)
		if ng := one(t, ngs, "node groups"); ng.Input("nodeGroupName") != base {
			t.Errorf("node group name %v, want %q", ng.Input("nodeGroupName"), base)
		}
	})
}

func checkLaunchTemplate(t *testing.T, ev *evaluation, pool topology.PoolSpec, lt offline.Resource, efaSG string, groups []offline.Resource) {
	nics, _ := lt.Input("networkInterfaces").([]any)
	if len(nics) != len(pool.Network.Interfaces) {
		t.Fatalf("%d interfaces, spec has %d", len(nics), len(pool.Network.Interfaces))
	}
	nodeSG := ev.byID(str(nics[0].(map[string]any)["securityGroups"].([]any)[0]))
	if nodeSG.Name != ev.spec.Cluster.Name+"-node" {
		t.Errorf("first security group of every interface is %s, want the node group", nodeSG.Name)
	}
	for i, raw := range nics {
		nic := raw.(map[string]any)
		want := pool.Network.Interfaces[i]
		if nic["networkCardIndex"] != float64(want.NetworkCardIndex) || nic["deviceIndex"] != float64(want.DeviceIndex) ||
			nic["interfaceType"] != want.InterfaceType {
			t.Errorf("interface %d = %v, want %+v", i, nic, want)
		}
		if nic["associatePublicIpAddress"] != "false" || nic["subnetId"] != nil {
			t.Errorf("interface %d asks for a public IP or names a subnet: %v", i, nic)
		}
		sgs := nic["securityGroups"].([]any)
		if efaSG != "" && (len(sgs) != 2 || sgs[1] != efaSG) {
			t.Errorf("interface %d security groups %v lack the EFA group %s", i, sgs, efaSG)
		}
	}
	md := lt.Input("metadataOptions").(map[string]any)
	if md["httpTokens"] != "required" || md["httpPutResponseHopLimit"] != 1.0 {
		t.Errorf("IMDSv2 not required: %v", md)
	}
	if lt.Input("subnetId") != nil {
		t.Error("a managed node group's launch template must not name a subnet")
	}
	placement, _ := lt.Input("placement").(map[string]any)
	if len(groups) == 1 {
		if placement["groupName"] != groups[0].Input("name") {
			t.Errorf("launch template placement %v does not reference the placement group", placement)
		}
	} else if placement != nil {
		t.Errorf("launch template has placement %v without a placement group", placement)
	}
	target, _ := lt.Input("capacityReservationSpecification").(map[string]any)
	market, _ := lt.Input("instanceMarketOptions").(map[string]any)
	switch pool.Capacity.Type {
	case topology.CapacityCapacityBlock:
		if market["marketType"] != "capacity-block" || target["capacityReservationTarget"].(map[string]any)["capacityReservationId"] != pool.Capacity.ReservationID {
			t.Errorf("capacity block not targeted: %v %v", market, target)
		}
	case topology.CapacityODCR:
		if market != nil || target["capacityReservationTarget"].(map[string]any)["capacityReservationId"] != pool.Capacity.ReservationID {
			t.Errorf("ODCR not targeted: %v %v", market, target)
		}
	default:
		if market != nil || target != nil {
			t.Errorf("%s pool targets a reservation: %v %v", pool.Capacity.Type, market, target)
		}
	}
	if _, err := base64.StdEncoding.DecodeString(str(lt.Input("userData"))); err != nil || lt.Input("userData") == nil {
		t.Errorf("user data is not base64: %v", err)
	}
}

func checkNodeGroup(t *testing.T, ev *evaluation, pool topology.PoolSpec, ng, lt offline.Resource) {
	zones := map[string]bool{}
	for _, id := range ng.Input("subnetIds").([]any) {
		zones[str(ev.byID(str(id)).Input("availabilityZone"))] = true
	}
	if len(zones) != 1 || !zones[pool.AvailabilityZones[0]] {
		t.Errorf("node group subnets span zones %v, want only %s", zones, pool.AvailabilityZones[0])
	}
	labels := ng.Input("labels").(map[string]any)
	if len(labels) != len(pool.Labels) {
		t.Errorf("labels %v, spec %v", labels, pool.Labels)
	}
	for k, v := range pool.Labels {
		if labels[k] != v {
			t.Errorf("label %s = %v, spec %s", k, labels[k], v)
		}
	}
	taints := ng.Input("taints").([]any)
	all := append(append([]topology.Taint{}, pool.Taints...), pool.StartupTaints...)
	if len(taints) != len(all) {
		t.Fatalf("taints %v, spec %v and startup %v", taints, pool.Taints, pool.StartupTaints)
	}
	effects := map[string]string{"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
	for i, raw := range taints {
		got, want := raw.(map[string]any), all[i]
		if got["key"] != want.Key || got["value"] != want.Value || got["effect"] != effects[want.Effect] {
			t.Errorf("taint %d = %v, spec %+v", i, got, want)
		}
	}
	scaling := ng.Input("scalingConfig").(map[string]any)
	if scaling["minSize"] != float64(pool.Scaling.MinNodes) || scaling["maxSize"] != float64(pool.Scaling.MaxNodes) ||
		scaling["desiredSize"] != float64(pool.Scaling.DesiredNodes) {
		t.Errorf("scaling %v, spec %+v", scaling, pool.Scaling)
	}
	// A Capacity Block's type is in the launch template and nowhere else (EKS refuses both).
	if pool.Capacity.Type == topology.CapacityCapacityBlock {
		if ng.Input("instanceTypes") != nil || lt.Input("instanceType") != pool.Instance.Name {
			t.Errorf("capacity block: node group instance types %v, launch template instance type %v; want none and %s",
				ng.Input("instanceTypes"), lt.Input("instanceType"), pool.Instance.Name)
		}
	} else if str(ng.Input("instanceTypes")) != str([]any{pool.Instance.Name}) || lt.Input("instanceType") != nil {
		t.Errorf("instance types %v, launch template instance type %v", ng.Input("instanceTypes"), lt.Input("instanceType"))
	}
	if ng.Input("launchTemplate").(map[string]any)["id"] != lt.ID {
		t.Errorf("node group does not use the pool's launch template")
	}
	wantCapacity := map[topology.CapacityType]string{topology.CapacityOnDemand: "ON_DEMAND", topology.CapacitySpot: "SPOT",
		topology.CapacityODCR: "ON_DEMAND", topology.CapacityCapacityBlock: "CAPACITY_BLOCK"}[pool.Capacity.Type]
	if ng.Input("capacityType") != wantCapacity {
		t.Errorf("capacity type %v, want %s", ng.Input("capacityType"), wantCapacity)
	}
}

func TestP5LaunchTemplateHas33Interfaces(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml")
	lt := one(t, ev.poolChildren("gpu", "aws:ec2/launchTemplate:LaunchTemplate"), "launch templates")
	nics := lt.Input("networkInterfaces").([]any)
	if len(nics) != 33 {
		t.Fatalf("%d interfaces", len(nics))
	}
	var layout []string
	for _, raw := range nics {
		n := raw.(map[string]any)
		layout = append(layout, fmt.Sprintf("%v/%v/%v", n["networkCardIndex"], n["deviceIndex"], n["interfaceType"]))
	}
	want := []string{"0/0/interface", "0/1/efa-only"}
	for card := 1; card < 32; card++ {
		want = append(want, fmt.Sprintf("%d/0/efa-only", card))
	}
	if strings.Join(layout, " ") != strings.Join(want, " ") {
		t.Errorf("layout\n %v\nwant\n %v", layout, want)
	}
}

func TestCapacityBlockPoolHasNoPlacementGroup(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.mixed.yaml")
	if n := len(ev.poolChildren("train", "aws:ec2/placementGroup:PlacementGroup")); n != 0 {
		t.Errorf("capacity block pool has %d placement groups", n)
	}
	if n := len(ev.poolChildren("infer", "aws:ec2/placementGroup:PlacementGroup")); n != 1 {
		t.Errorf("on-demand EFA pool has %d placement groups, want 1", n)
	}
	types := map[string]bool{}
	for _, p := range ev.spec.Pools {
		types[p.Instance.Name] = true
	}
	if len(ev.spec.Pools) != 2 || len(types) != 2 {
		t.Errorf("the mixed stack must hold two pools of different types: %v", types)
	}
}

func TestCustomImagePoolBootstrapsItself(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.p4d-custom-ami.yaml")
	lt := one(t, ev.poolChildren("gpu", "aws:ec2/launchTemplate:LaunchTemplate"), "launch templates")
	ng := one(t, ev.poolChildren("gpu", "aws:eks/nodeGroup:NodeGroup"), "node groups")
	if lt.Input("imageId") != "ami-0123456789abcdef0" || ng.Input("amiType") != "CUSTOM" {
		t.Errorf("custom image not used: %v %v", lt.Input("imageId"), ng.Input("amiType"))
	}
	raw, _ := base64.StdEncoding.DecodeString(str(lt.Input("userData")))
	ud := string(raw)
	// The endpoint and CA come from the cluster: the launch template waits for it, and its user
	// data carries both (their values are the engine's, so only their presence is asserted).
	eks := one(t, ev.ofType("eks:index:Cluster"), "EKS clusters")
	if !dependsOn(lt, eks) {
		t.Errorf("the launch template does not depend on the cluster whose endpoint it carries: %v", lt.Dependencies)
	}
	for _, re := range []string{`apiServerEndpoint: https://\S+`, `certificateAuthority: \S+`} {
		if !regexp.MustCompile(re).MatchString(ud) {
			t.Errorf("custom-image user data lacks %s", re)
		}
	}
	for _, want := range []string{"Content-Type: application/node.eks.aws", "kind: NodeConfig",
		"cidr: 172.20.0.0/16", "--register-with-taints=nvidia.com/gpu=true:NoSchedule", "gpucluster.io/efa=true", "strategy: RAID0"} {
		if !strings.Contains(ud, want) {
			t.Errorf("custom-image user data lacks %q:\n%s", want, ud)
		}
	}
	if ev.spec.Pools[0].InCluster.FabricManager.RunBy != topology.FabricManagerRunByDaemonSet {
		t.Error("the custom-image p4d stack must resolve fabric manager to a DaemonSet")
	}
}

func TestExistingVPCIsTaggedNotCreated(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.byo.yaml")
	os.WriteFile(file, []byte(`config:
  aws:region: us-east-1
  gpucluster:vpcId: vpc-0123456789abcdef0
  gpucluster:privateSubnets: {us-east-1a: subnet-0123456789abcdef0, us-east-1b: subnet-0123456789abcdef1}
  gpucluster:pools: [{name: gpu, profile: g6e-efa, availabilityZones: [us-east-1b]}]
`), 0o644)
	spec, err := topology.LoadStack(file, testDay)
	if err != nil {
		t.Fatal(err)
	}
	engine := offline.NewEngine(spec.Stack)
	if err := engine.Run(func(ctx *pulumi.Context) error { _, err := Build(ctx, spec); return err }); err != nil {
		t.Fatal(err)
	}
	var tags, vpcs int
	var ngSubnets []any
	for _, r := range engine.Resources() {
		switch r.Type {
		case "aws:ec2/tag:Tag":
			tags++
		case "aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/natGateway:NatGateway":
			vpcs++
		case "aws:eks/nodeGroup:NodeGroup":
			if r.Input("nodeGroupName") == "byo-gpu" {
				ngSubnets = r.Input("subnetIds").([]any)
			}
		}
	}
	// An existing VPC's flow logs are its owner's: none unless the stack asks.
	if n := len(ofType(engine.Resources(), "aws:ec2/flowLog:FlowLog")); n != 0 {
		t.Errorf("%d flow logs on an existing VPC by default", n)
	}
	if vpcs != 0 || tags != 6 || str(ngSubnets) != "[subnet-0123456789abcdef1]" {
		t.Errorf("created %d network resources, %d tags, pool subnets %v", vpcs, tags, ngSubnets)
	}
}

func TestInvalidStackRegistersNothing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.bad.yaml")
	os.WriteFile(file, []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: p4d-efa, efaInterfaces: 9}]\n"), 0o644)
	engine := offline.NewEngine("bad")
	err := engine.Run(Run(file, testDay))
	var ces topology.ConfigErrors
	if !errors.As(err, &ces) || !strings.Contains(err.Error(), file+":3: gpucluster:pools[0].efaInterfaces") {
		t.Fatalf("error %v", err)
	}
	if n := len(engine.Resources()); n != 0 {
		t.Errorf("an invalid stack registered %d resources", n)
	}
	// The file of another stack is refused too, before anything is created.
	engine = offline.NewEngine("prod")
	if err := engine.Run(Run("../../stacks/Pulumi.dev.yaml", testDay)); err == nil || !strings.Contains(err.Error(), `holds the config of stack "dev"`) {
		t.Errorf("stack mismatch: %v", err)
	}
	if n := len(engine.Resources()); n != 0 {
		t.Errorf("a mismatched stack registered %d resources", n)
	}
}

// runCapturing runs fn under engine and returns the stack outputs it exported, resolved.
func runCapturing(t *testing.T, engine *offline.Engine, fn pulumi.RunFunc) (map[string]pulumi.Output, map[string]any, error) {
	t.Helper()
	var outs map[string]pulumi.Output
	values := map[string]any{}
	var mu sync.Mutex
	var resolved sync.WaitGroup
	exported = func(o map[string]pulumi.Output) {
		outs = o
		for k, v := range o {
			resolved.Add(1)
			v.ApplyT(func(x any) any {
				defer resolved.Done()
				mu.Lock()
				defer mu.Unlock()
				values[k] = x
				return x
			})
		}
	}
	defer func() { exported = func(map[string]pulumi.Output) {} }()
	err := engine.Run(fn)
	if err != nil {
		return outs, values, err
	}
	// Outputs built from plain maps resolve outside the context's bookkeeping: Run may return
	// before their callbacks ran. Wait for every one (bounded: a hang is a failure, not a wait).
	done := make(chan struct{})
	go func() { resolved.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("stack outputs never resolved")
	}
	mu.Lock()
	defer mu.Unlock()
	return outs, values, nil
}

func TestRunExportsTheOutputs(t *testing.T) {
	outs, values, err := runCapturing(t, offline.NewEngine("dev"), Run("../../stacks/Pulumi.dev.yaml", testDay))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"benchmarkJobs", "capacityBlockPools", "clusterName", "kubeconfig", "nodeGroupNames", "placementGroupNames", "systemNodeGroupName", "trainingPodTemplates", "vpcId"}
	if got := sortedKeys(values); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("exports %v, want %v", got, want)
	}
	if values["clusterName"] != "dev" {
		t.Errorf("clusterName %v", values["clusterName"])
	}
	ng, _ := values["nodeGroupNames"].(map[string]string)
	pg, _ := values["placementGroupNames"].(map[string]string)
	if len(ng) != 1 || ng["gpu"] == "" || len(pg) != 1 {
		t.Errorf("node groups %v, placement groups %v", values["nodeGroupNames"], values["placementGroupNames"])
	}
	tpl, _ := values["trainingPodTemplates"].(map[string]any)
	if gpu, _ := tpl["gpu"].(map[string]any); gpu["spec"] == nil {
		t.Errorf("training pod template of pool gpu: %v", tpl)
	}
	if jobs, _ := values["benchmarkJobs"].(map[string]any); len(jobs) != 0 {
		t.Errorf("dev does not enable benchmarks, yet exports jobs %v", jobs)
	}
	// An experiment stack exports each pool's jobs as one List for kubectl apply -f -.
	_, values, err = runCapturing(t, offline.NewEngine("p5-efa"), Run("../../stacks/Pulumi.p5-efa.yaml", testDay))
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := values["benchmarkJobs"].(map[string]any)
	list, _ := jobs["gpu"].(map[string]any)
	items, _ := list["items"].([]any)
	if list["kind"] != "List" || len(items) != 1 || items[0].(map[string]any)["kind"] != "MPIJob" {
		t.Errorf("p5-efa benchmarkJobs %v", jobs)
	}
	for k, o := range outs {
		if pulumi.IsSecret(o) != (k == "kubeconfig") {
			t.Errorf("%s secret: %v", k, pulumi.IsSecret(o))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestStackFileIsFoundFromTheProgramDirectory(t *testing.T) {
	got, err := StackFile("..", "p5-efa")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs("../../stacks/Pulumi.p5-efa.yaml"); mustAbs(t, got) != want {
		t.Errorf("stack file %s, want %s", got, want)
	}
	t.Setenv(EnvStackFile, "/elsewhere/Pulumi.x.yaml")
	if got, _ := StackFile("..", "x"); got != "/elsewhere/Pulumi.x.yaml" {
		t.Errorf("override ignored: %s", got)
	}
	t.Setenv(EnvStackFile, "")
	if _, err := StackFile(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "no Pulumi.yaml") {
		t.Errorf("outside a project: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestControlPlaneLogGroupIsOwned: the stack creates EKS's control-plane log group, with a
// retention, before the cluster (which depends on it, so destroy deletes it after the cluster).
func TestControlPlaneLogGroupIsOwned(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml")
	// Written out: EKS sends a cluster's control-plane logs to /aws/eks/<cluster name>/cluster
	// (EKS user guide, "Send control plane logs to CloudWatch Logs"); a quarter's retention.
	const name, days = "/aws/eks/p5-efa/cluster", 90
	var group *offline.Resource
	for _, r := range ev.ofType("aws:cloudwatch/logGroup:LogGroup") {
		if r.Input("name") == name {
			group = &r
		}
	}
	if ev.spec.Cluster.Name != "p5-efa" || group == nil || group.Input("retentionInDays") != float64(days) {
		t.Fatalf("no control-plane log group %s with a %d-day retention: %v", name, days, group)
	}
	cluster := one(t, ev.ofType("eks:index:Cluster"), "EKS clusters")
	if !dependsOn(cluster, *group) {
		t.Error("the EKS cluster does not depend on its log group: EKS could create it first, unowned")
	}
}

// TestCreatorInAdminRoleArnsIsRefusedBeforeAnythingExists: an admin entry for the identity
// running pulumi (here an assumed-role session of the listed role, as GetCallerIdentity returns
// it) fails the program with the file, line, key and fix, before a single resource is registered.
func TestCreatorInAdminRoleArnsIsRefusedBeforeAnythingExists(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.admins.yaml")
	stack := "config:\n  aws:region: us-east-1\n  gpucluster:adminRoleArns:\n    - arn:aws:iam::111122223333:role/ops\n    - arn:aws:iam::111122223333:role/Platform\n" +
		"  gpucluster:pools:\n    - {name: gpu, profile: dev}\n"
	if err := os.WriteFile(file, []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := topology.LoadStack(file, testDay)
	if err != nil {
		t.Fatal(err)
	}
	for caller, refused := range map[string]bool{
		"arn:aws:sts::111122223333:assumed-role/platform/alice": true,
		"arn:aws:sts::111122223333:assumed-role/deployer/ci":    false,
	} {
		engine := offline.NewEngine(spec.Stack).WithCaller(caller)
		err := engine.Run(func(ctx *pulumi.Context) error { _, err := Build(ctx, spec); return err })
		if !refused {
			if err != nil {
				t.Errorf("caller %s: %v", caller, err)
			}
			continue
		}
		want := file + ":5: gpucluster:adminRoleArns[1]: "
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ResourceInUseException") {
			t.Errorf("caller %s: error %v, want one at %s", caller, err, want)
		}
		if n := len(engine.Resources()); n != 0 {
			t.Errorf("caller %s: %d resources registered before the refusal", caller, n)
		}
	}
}

// TestGB200NodeGroupIsPinnedToItsRelease: the GB200 EFA pool's node group names the EKS image
// release whose 580 driver its NVIDIA module option is chosen for; a pool whose facts do not
// hang on the driver (p5) lets EKS take the newest release.
func TestGB200NodeGroupIsPinnedToItsRelease(t *testing.T) {
	ev := evaluate(t, "../../stacks/Pulumi.gb200-nvl72.yaml")
	ng := one(t, ev.poolChildren("nvl", "aws:eks/nodeGroup:NodeGroup"), "node groups")
	if want := topology.NodeImageRelease(ev.spec.Cluster.KubernetesVersion); want == "" || ng.Input("releaseVersion") != want {
		t.Errorf("GB200 node group releaseVersion %v, want %q (the pinned release for Kubernetes %s)", ng.Input("releaseVersion"), want, ev.spec.Cluster.KubernetesVersion)
	}
	p5 := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml")
	for _, ng := range p5.ofType("aws:eks/nodeGroup:NodeGroup") {
		if v := ng.Input("releaseVersion"); v != nil {
			t.Errorf("p5-efa node group %s pins releaseVersion %v", ng.URN, v)
		}
	}
}

// TestReservationInItsOwnPlacementGroup: an ODCR made in a cluster placement group is launched
// into that group, by name, on a managed pool (the launch template) and a Karpenter pool (the
// EC2NodeClass's selector); gpucluster creates no group of its own for either.
func TestReservationInItsOwnPlacementGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.cpg.yaml")
	stack := `config:
  aws:region: us-west-2
  gpucluster:pools:
    - name: gpu
      profile: p5-efa
      capacity: odcr
      capacityReservationId: cr-0123456789abcdef0
      placementGroupName: team-p5-cpg
    - name: burst
      profile: karpenter-p5
      capacity: odcr
      capacityReservationId: cr-0fedcba9876543210
      placementGroupName: team-burst-cpg
`
	if err := os.WriteFile(file, []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := evaluate(t, file)
	if groups := ev.ofType("aws:ec2/placementGroup:PlacementGroup"); len(groups) != 0 {
		t.Errorf("%d placement groups created; the reservations' groups exist already", len(groups))
	}
	lt := one(t, ev.poolChildren("gpu", "aws:ec2/launchTemplate:LaunchTemplate"), "launch templates")
	if placement, _ := lt.Input("placement").(map[string]any); placement["groupName"] != "team-p5-cpg" {
		t.Errorf("launch template placement %v, want the reservation's group", lt.Input("placement"))
	}
	nc := one(t, ev.ofType("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"), "node classes")
	spec, _ := nc.Input("spec").(map[string]any)
	if sel, _ := spec["placementGroupSelector"].(map[string]any); sel["name"] != "team-burst-cpg" {
		t.Errorf("EC2NodeClass placement group selector %v, want the reservation's group", spec["placementGroupSelector"])
	}
	for _, p := range ev.spec.Pools {
		if p.Placement.Strategy != topology.PlacementCluster || !strings.Contains(p.Placement.Reason, "neither creates nor deletes the group") {
			t.Errorf("pool %s placement %+v", p.Name, p.Placement)
		}
	}
}
