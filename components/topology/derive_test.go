package topology

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

func TestBuiltinProfilesNamedAsTheIssueSays(t *testing.T) {
	want := []string{"dev", "g6e-efa", "g6e-ena", "g7e-efa", "gb200-nvl72", "karpenter-p5", "p4d-efa", "p4d-pod-per-gpu", "p5-efa", "p6-b300-efa"}
	if got := BuiltinProfileNames(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("built-in profiles %v, want %v", got, want)
	}
}

func TestBuiltinProfiles(t *testing.T) {
	type want struct {
		instance      string
		interfaces    int // total launch-template interfaces
		efa           int
		placement     Placement
		fmRunBy       string
		fmDaemonSet   bool
		pods, gpus    int // per node, per pod
		efaPerPod     int
		intra, inter  string
		expectedGbps  float64
		efaPlugin     bool
		desired, gpuL int
	}
	cases := map[string]want{
		"p4d-efa": {"p4d.24xlarge", 5, 4, PlacementCluster, FabricManagerRunByHost, false, 1, 8, 4,
			TransportP2P, TransportNetLibfabricGDR, 400, true, 2, 16},
		"p4d-pod-per-gpu": {"p4d.24xlarge", 5, 4, PlacementCluster, FabricManagerRunByHost, false, 4, 1, 1,
			TransportNetLibfabricGDR, TransportNetLibfabricGDR, 400, true, 1, 8},
		"p5-efa": {"p5.48xlarge", 33, 32, PlacementCluster, FabricManagerRunByHost, false, 1, 8, 32,
			TransportP2P, TransportNetLibfabricGDR, 3200, true, 2, 16},
		"g6e-efa": {"g6e.12xlarge", 2, 1, PlacementCluster, FabricManagerNotNeeded, false, 1, 4, 1,
			TransportSHM, TransportNetLibfabric, 100, true, 4, 16},
		"g6e-ena": {"g6e.12xlarge", 1, 0, PlacementCluster, FabricManagerNotNeeded, false, 1, 4, 0,
			TransportSHM, TransportNetSocket, 100, false, 4, 16},
		"karpenter-p5": {"p5.48xlarge", 33, 32, PlacementCluster, FabricManagerRunByHost, false, 1, 8, 32,
			TransportP2P, TransportNetLibfabricGDR, 3200, true, 0, 32},
		// The 2026 fleet (issue 22): p6-b300's 16 EFA on cards 1-16 at 400 Gbps; g7e's PCIe GPUs
		// without a stated P2P or GPUDirect RDMA; GB200's 4 of 8 EFA cards (one NIC per GPU), its
		// nodes joined by multi-node NVLink and no fabric manager on the instance.
		"p6-b300-efa": {"p6-b300.48xlarge", 17, 16, PlacementCluster, FabricManagerRunByHost, false, 1, 8, 16,
			TransportP2P, TransportNetLibfabricGDR, 6400, true, 2, 16},
		"g7e-efa": {"g7e.48xlarge", 5, 4, PlacementCluster, FabricManagerNotNeeded, false, 1, 8, 4,
			TransportSHM, TransportNetLibfabric, 1600, true, 2, 16},
		"gb200-nvl72": {"p6e-gb200.36xlarge", 5, 4, PlacementNone, FabricManagerNotNeeded, false, 1, 4, 4,
			TransportP2P, TransportP2P, 1600, true, 18, 72},
		"dev": {"g6e.xlarge", 1, 0, PlacementNone, FabricManagerNotNeeded, false, 1, 1, 0,
			TransportNone, TransportNetSocket, 2.5, false, 1, 1}, // the baseline, not the "up to 20"
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			p, ok := BuiltinProfile(name)
			if !ok {
				t.Fatalf("no built-in %s", name)
			}
			s, err := Derive(name, p)
			if err != nil {
				t.Fatal(err)
			}
			got := want{s.Instance.Name, len(s.Network.Interfaces), s.Network.EFAInterfaces, s.Placement.Strategy,
				s.InCluster.FabricManager.RunBy, s.InCluster.FabricManager.Deploy, s.TrainingPod.PodsPerNode, s.TrainingPod.GPUsPerPod,
				s.TrainingPod.EFAPerPod, s.NCCL.IntraNode.Class, s.NCCL.InterNode.Class, s.NCCL.ExpectedInterNodeGbps,
				s.InCluster.EFADevicePlugin.Deploy, s.Scaling.DesiredNodes, s.Scaling.GPULimit}
			if got != w {
				t.Errorf("\n got %+v\nwant %+v", got, w)
			}
			checkSpecInvariants(t, p, s)
		})
	}
}

// TestP5InterfaceLayout spells out the layout of shared/DESIGN.md for the largest type.
func TestP5InterfaceLayout(t *testing.T) {
	p, _ := BuiltinProfile("p5-efa")
	s, err := Derive("p5", p)
	if err != nil {
		t.Fatal(err)
	}
	nics := s.Network.Interfaces
	if len(nics) != 33 {
		t.Fatalf("%d interfaces, want 33", len(nics))
	}
	if n := nics[0]; n.NetworkCardIndex != 0 || n.DeviceIndex != 0 || n.InterfaceType != InterfaceENA {
		t.Errorf("primary: %+v", n)
	}
	if n := nics[1]; n.NetworkCardIndex != 0 || n.DeviceIndex != 1 || n.InterfaceType != InterfaceEFAOnly {
		t.Errorf("card 0 EFA: %+v", n)
	}
	for card := 1; card < 32; card++ {
		if n := nics[card+1]; n.NetworkCardIndex != card || n.DeviceIndex != 0 || n.InterfaceType != InterfaceEFAOnly {
			t.Errorf("card %d: %+v", card, n)
		}
	}
}

func TestFabricManagerDecisions(t *testing.T) {
	cases := []struct {
		instance string
		ami      AMIFamily
		mode     FabricManagerMode
		runBy    string
		deploy   bool
	}{
		{"p4d.24xlarge", AMIAL2023NVIDIA, FabricManagerAuto, FabricManagerRunByHost, false},
		{"p4d.24xlarge", AMIBottlerocketNVIDIA, FabricManagerAuto, FabricManagerRunByHost, false},
		{"p4d.24xlarge", AMICustom, FabricManagerAuto, FabricManagerRunByDaemonSet, true},
		{"p4d.24xlarge", AMICustom, FabricManagerDaemonSet, FabricManagerRunByDaemonSet, true},
		{"p4d.24xlarge", AMICustom, FabricManagerHost, FabricManagerRunByHost, false},
		{"p6-b200.48xlarge", AMICustom, FabricManagerHost, FabricManagerRunByHost, false},
		{"p6-b200.48xlarge", AMIAL2023NVIDIA, FabricManagerAuto, FabricManagerRunByHost, false},
		{"g6e.48xlarge", AMICustom, FabricManagerAuto, FabricManagerNotNeeded, false},
		{"g6e.48xlarge", AMIAL2023NVIDIA, FabricManagerHost, FabricManagerNotNeeded, false},
	}
	for _, c := range cases {
		p := base()
		p.InstanceType, p.AMIFamily, p.FabricManager = c.instance, c.ami, c.mode
		if c.ami == AMICustom {
			p.AMIID = "ami-0123456789abcdef0"
		}
		s, err := Derive("x", p)
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		fm := s.InCluster.FabricManager
		if fm.RunBy != c.runBy || fm.Deploy != c.deploy || fm.Reason == "" {
			t.Errorf("%s %s %s: got %+v, want runBy %s deploy %v", c.instance, c.ami, c.mode, fm, c.runBy, c.deploy)
		}
		// Every NVSwitch node waits for CUDA, which works once fabric manager serves, whoever runs it.
		if s.HealthGate.WaitForCUDA != fm.Required || fm.NVLinkSubnetManager != (c.instance == "p6-b200.48xlarge") {
			t.Errorf("%s %s %s: health gate %+v, NVLSM %v", c.instance, c.ami, c.mode, s.HealthGate, fm.NVLinkSubnetManager)
		}
	}
}

// TestNVLink5RefusesTheFabricManagerDaemonSet: the DaemonSet runs no NVLink Subnet Manager, so a
// p6-b200 pool that would need it is refused with the fix.
func TestNVLink5RefusesTheFabricManagerDaemonSet(t *testing.T) {
	for _, mode := range []FabricManagerMode{FabricManagerAuto, FabricManagerDaemonSet} {
		p := base()
		p.InstanceType, p.AMIFamily, p.AMIID, p.FabricManager = "p6-b200.48xlarge", AMICustom, "ami-0123456789abcdef0", mode
		if _, err := Derive("x", p); err == nil || !strings.Contains(err.Error(), "NVLink Subnet Manager") {
			t.Errorf("fabricManager %s: %v", mode, err)
		}
	}
}

func TestReservedCapacityGetsNoPlacementGroup(t *testing.T) {
	for _, capacity := range []CapacityType{CapacityODCR, CapacityCapacityBlock} {
		p, _ := BuiltinProfile("p5-efa")
		p.Capacity, p.CapacityReservationID = capacity, "cr-0123456789abcdef0"
		s, err := Derive("p5", p)
		if err != nil {
			t.Fatal(err)
		}
		if s.Placement.Strategy != PlacementNone || !strings.Contains(s.Placement.Reason, "already placed") {
			t.Errorf("%s: placement %+v", capacity, s.Placement)
		}
		for _, f := range s.Findings {
			if f.Code == "efa-without-placement-group" {
				t.Errorf("%s: reserved capacity must not be reported as a missing placement group", capacity)
			}
		}
	}
}

func TestBottlerocketSkipsNVIDIADevicePlugin(t *testing.T) {
	p, _ := BuiltinProfile("p5-efa")
	p.AMIFamily = AMIBottlerocketNVIDIA
	s, err := Derive("p5", p)
	if err != nil {
		t.Fatal(err)
	}
	if s.InCluster.NVIDIADevicePlugin.Deploy || !s.InCluster.EFADevicePlugin.Deploy {
		t.Errorf("bottlerocket: %+v", s.InCluster)
	}
}

func TestNCCLEnvOverridesWinAndAreReported(t *testing.T) {
	p, _ := BuiltinProfile("p4d-efa")
	p.NCCLEnv = map[string]string{"NCCL_DEBUG": "WARN", "NCCL_PROTO": "simple", "FI_EFA_USE_DEVICE_RDMA": "1"}
	s, err := Derive("p4d", p)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]EnvVar{}
	for _, e := range s.TrainingPod.Env {
		env[e.Name] = e
	}
	if e := env["NCCL_DEBUG"]; e.Value != "WARN" || e.Source != "override" {
		t.Errorf("override lost: %+v", e)
	}
	codes := map[string]bool{}
	for _, f := range s.Findings {
		codes[f.Code] = true
	}
	for _, c := range []string{"nccl-env-overrides-plugin", "nccl-env-obsolete", "nccl-proto-forced"} {
		if !codes[c] {
			t.Errorf("missing finding %s in %+v", c, s.Findings)
		}
	}
}

// TestDerivationSweep derives every combination of instance type, fabric, layout, capacity,
// image and fabric-manager mode. Each is either rejected by validation or yields a spec that
// keeps every invariant: the rules hold for all inputs, not just the built-ins.
func TestDerivationSweep(t *testing.T) {
	derived, rejected := 0, 0
	for _, it := range catalog.All() {
		for _, fabric := range []Fabric{FabricEFA, FabricENAOnly} {
			for _, layout := range []PodLayout{PodPerNode, PodPerGPU} {
				for _, pods := range []int{0, 1, 2, 4, 8} {
					for _, capacity := range []CapacityType{CapacityOnDemand, CapacitySpot, CapacityCapacityBlock} {
						for _, ami := range []AMIFamily{AMIAL2023NVIDIA, AMIBottlerocketNVIDIA, AMICustom} {
							for _, fm := range []FabricManagerMode{FabricManagerAuto, FabricManagerDaemonSet, FabricManagerHost} {
								for _, efaN := range []int{0, 1, 3} {
									p := base()
									p.InstanceType, p.Fabric, p.PodLayout, p.PodsPerNode = it.Name, fabric, layout, pods
									p.Capacity, p.AMIFamily, p.FabricManager = capacity, ami, fm
									if fabric == FabricEFA {
										p.EFAInterfaces = efaN
									}
									if capacity.Reserved() {
										p.CapacityReservationID = "cr-0123456789abcdef0"
									}
									if ami == AMICustom {
										p.AMIID = "ami-0123456789abcdef0"
									}
									p.ShmSize = "1Gi"
									s, err := Derive("sweep", p)
									if err != nil {
										rejected++
										continue
									}
									derived++
									checkSpecInvariants(t, p, s)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("derived %d specs, rejected %d combinations", derived, rejected)
	if derived == 0 || rejected == 0 {
		t.Fatalf("the sweep must exercise both outcomes: derived %d, rejected %d", derived, rejected)
	}
}

// checkSpecInvariants are the rules of shared/DESIGN.md that every derived spec keeps.
func checkSpecInvariants(t *testing.T, p Profile, s PoolSpec) {
	t.Helper()
	it := s.Instance
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s/%s/%s/%s: %s", it.Name, p.Fabric, p.PodLayout, p.AMIFamily, fmt.Sprintf(format, args...))
	}
	// Interfaces: primary ENA on card 0 device 0, then one efa-only per card; indices in range.
	nics := s.Network.Interfaces
	if len(nics) != 1+s.Network.EFAInterfaces {
		fail("%d interfaces for %d EFA", len(nics), s.Network.EFAInterfaces)
	}
	if nics[0] != (NetworkInterface{0, 0, InterfaceENA, false, true}) {
		fail("primary interface %+v", nics[0])
	}
	cards := map[int]bool{}
	for _, n := range nics[1:] {
		if n.InterfaceType != InterfaceEFAOnly || cards[n.NetworkCardIndex] {
			fail("EFA interface %+v: one efa-only per card", n)
		}
		cards[n.NetworkCardIndex] = true
	}
	for _, n := range nics {
		if n.NetworkCardIndex >= it.NetworkCards || n.DeviceIndex >= it.MaxENIsPerCard || n.AssociatePublicIPAddress {
			fail("interface %+v out of range or public", n)
		}
	}
	if s.Network.EFAInterfaces > it.MaxEFA || (s.Network.EFAInterfaces > 0) != (p.Fabric == FabricEFA) {
		fail("EFA count %d", s.Network.EFAInterfaces)
	}
	// EFA security group: ingress and egress to itself, exactly on EFA pools.
	if s.Network.EFAInterfaces > 0 {
		in, out := false, false
		for _, r := range s.Network.EFASecurityGroup {
			in = in || (r.Direction == "ingress" && r.Self && r.Protocol == "-1")
			out = out || (r.Direction == "egress" && r.Self && r.Protocol == "-1")
		}
		if !in || !out || !s.Network.SingleSubnet {
			fail("EFA SG rules %+v single subnet %v", s.Network.EFASecurityGroup, s.Network.SingleSubnet)
		}
	} else if len(s.Network.EFASecurityGroup) != 0 {
		fail("EFA SG on a pool without EFA")
	}
	// Placement: never a group on reserved capacity; always a reason.
	if p.Capacity.Reserved() && s.Placement.Strategy != PlacementNone || s.Placement.Reason == "" {
		fail("placement %+v for capacity %s", s.Placement, p.Capacity)
	}
	// Every repelling taint is tolerated by what runs on the pool.
	for _, taint := range s.Taints {
		if taint.Effect != "PreferNoSchedule" && !toleratedByAny(s.Tolerations, taint) {
			fail("taint %+v tolerated by nothing", taint)
		}
	}
	if s.Labels[LabelPool] != s.Name || (s.Labels[LabelEFA] == "true") != (s.Network.EFAInterfaces > 0) {
		fail("labels %v", s.Labels)
	}
	// In-cluster pieces.
	fm := s.InCluster.FabricManager
	if fm.Deploy && (!it.FabricManager || p.AMIFamily.RunsHostFabricManager()) {
		fail("fabric manager DaemonSet on %s with %s", it.Name, p.AMIFamily)
	}
	if it.FabricManager != fm.Required || (it.FabricManager && p.AMIFamily == AMICustom && p.FabricManager != FabricManagerHost && !fm.Deploy) {
		fail("fabric manager decision %+v", fm)
	}
	if s.InCluster.NVIDIADevicePlugin.Deploy == (p.AMIFamily == AMIBottlerocketNVIDIA) {
		fail("NVIDIA device plugin decision %+v", s.InCluster.NVIDIADevicePlugin)
	}
	if s.InCluster.EFADevicePlugin.Deploy != (s.Network.EFAInterfaces > 0) {
		fail("EFA device plugin decision %+v", s.InCluster.EFADevicePlugin)
	}
	// Training pod: never more GPUs or EFA than the node has; every EFA pod has an EFA device.
	pod := s.TrainingPod
	if pod.PodsPerNode*pod.GPUsPerPod+pod.IdleGPUsPerNode != it.GPUCount || pod.PodsPerNode*pod.EFAPerPod > s.Network.EFAInterfaces {
		fail("pod shape %d x %d GPU x %d EFA on %d GPU / %d EFA", pod.PodsPerNode, pod.GPUsPerPod, pod.EFAPerPod, it.GPUCount, s.Network.EFAInterfaces)
	}
	if s.Network.EFAInterfaces > 0 && pod.EFAPerPod < 1 {
		fail("a pod on an EFA pool without an EFA device falls back to sockets")
	}
	if pod.Resources[ResourceGPU] != pod.GPUsPerPod || pod.Resources[ResourceEFA] != pod.EFAPerPod {
		fail("resources %v", pod.Resources)
	}
	// hostIPC exactly where GPUs in one pod share memory over IPC (more than one GPU per pod).
	if pod.HostIPC != (pod.GPUsPerPod > 1) || pod.HostNetwork || pod.ShmSizeBytes <= 0 || fmt.Sprint(pod.Capabilities) != "[IPC_LOCK]" {
		fail("pod security shape %+v", pod)
	}
	// Expected transports agree with the hardware.
	wantInter := TransportNetSocket
	if s.Network.EFAInterfaces > 0 {
		wantInter = TransportNetLibfabric
		if it.GPUDirectRDMA {
			wantInter = TransportNetLibfabricGDR
		}
	}
	if it.MultiNodeNVLink() {
		wantInter = TransportP2P // the UltraServer's NVLink joins its nodes
	}
	if s.NCCL.InterNode.Class != wantInter {
		fail("inter-node %s, want %s", s.NCCL.InterNode.Class, wantInter)
	}
	if s.NCCL.ExpectedInterNodeGbps <= 0 || s.NCCL.ExpectedInterNodeGbps > float64(it.NetworkGbps) {
		fail("expected bandwidth %.1f of %d", s.NCCL.ExpectedInterNodeGbps, it.NetworkGbps)
	}
}

// A managed node group with a range is not autoscaled by anything gpucluster deploys: the review
// says so; a fixed size and a Karpenter pool (which scales on pending pods) do not get the finding.
func TestNoAutoscalerFinding(t *testing.T) {
	has := func(p Profile) (bool, string) {
		s, err := Derive("gpu", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range s.Findings {
			if f.Code == "no-autoscaler" {
				return true, f.Message
			}
		}
		return false, ""
	}
	ranged, _ := BuiltinProfile("g6e-efa")
	ranged.MinNodes, ranged.MaxNodes = 0, 3
	if ok, msg := has(ranged); !ok || !strings.Contains(msg, "0 to 3 nodes runs 1") || !strings.Contains(msg, "provisioner: karpenter") {
		t.Errorf("managed 0-3: %v %q", ok, msg)
	}
	fixed, _ := BuiltinProfile("g6e-efa")
	if ok, _ := has(fixed); ok {
		t.Error("a fixed-size node group got no-autoscaler")
	}
	karp, _ := BuiltinProfile("karpenter-p5")
	if ok, _ := has(karp); ok {
		t.Error("a Karpenter pool got no-autoscaler")
	}
}

// TestAtTimeStopsPoolsAfterTheExpiry: before the expiry the spec is unchanged; after it every pool
// is at zero (managed groups keep their maximum, Karpenter pools a GPU limit of 0), with a finding.
func TestAtTimeStopsPoolsAfterTheExpiry(t *testing.T) {
	managed, _ := BuiltinProfile("p5-efa")
	karp, _ := BuiltinProfile("karpenter-p5")
	var spec StackSpec
	for _, np := range []struct {
		name string
		p    Profile
	}{{"m", managed}, {"k", karp}} {
		ps, err := Derive(np.name, np.p)
		if err != nil {
			t.Fatal(err)
		}
		spec.Pools = append(spec.Pools, ps)
	}
	spec.Expiry = "2026-12-01T18:00:00Z"
	at := spec.ExpiresAt()
	if before := spec.AtTime(at.Add(-time.Minute)); !reflect.DeepEqual(before, spec) {
		t.Error("the spec changed before the expiry")
	}
	after := spec.AtTime(at)
	for i, p := range after.Pools {
		if p.Scaling.MinNodes != 0 || p.Scaling.DesiredNodes != 0 || p.Scaling.GPULimit != 0 || p.Scaling.MaxNodes != spec.Pools[i].Scaling.MaxNodes {
			t.Errorf("%s after the expiry: %+v", p.Name, p.Scaling)
		}
		if n := len(p.Findings); n == 0 || p.Findings[n-1].Code != FindingExpired {
			t.Errorf("%s: no expiry finding", p.Name)
		}
	}
	if spec.Pools[0].Scaling.MinNodes == 0 || spec.Pools[0].Scaling.DesiredNodes == 0 {
		t.Errorf("AtTime changed the spec it was given: managed pool %+v", spec.Pools[0].Scaling)
	}
}
