package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/amazon-vpc-cni-k8s/pkg/vpc"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// The instance types the catalog must hold (issue: topology core, §1).
var requiredTypes = []string{
	"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
	"g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge",
	"g5.48xlarge", "g6.48xlarge",
	// The 2026 fleet (issue 22).
	"p5.4xlarge", "p6-b300.48xlarge", "p6e-gb200.36xlarge",
	"g7e.2xlarge", "g7e.4xlarge", "g7e.8xlarge", "g7e.12xlarge", "g7e.24xlarge", "g7e.48xlarge",
}

func TestCatalogHoldsEveryRequiredType(t *testing.T) {
	for _, name := range requiredTypes {
		if _, ok := Lookup(name); !ok {
			t.Errorf("catalog lacks %s", name)
		}
	}
	if got, want := len(All()), len(requiredTypes); got != want {
		t.Errorf("catalog has %d entries, the required list %d: add the new type to requiredTypes", got, want)
	}
}

// notInGeneratedData are the catalog types no generated table in the build holds yet, with why;
// their network figures keep their cited sources. A type that appears in the data must leave this
// list (the test says so), so the exception cannot outlive its reason.
var notInGeneratedData = map[string]string{
	"p6e-gb200.36xlarge": "sold only as UltraServers; Karpenter does not launch it, so its generated limits omit it, and vpc-cni v1.20.4 predates it",
}

// karpenterVPCLimits reads Karpenter's generated per-type network limits (karpenter-provider-aws
// v1.15.2 pkg/providers/instancetype/zz_generated.vpclimits.go, from EC2 DescribeInstanceTypes):
// each type's interfaces per network card, card by card, and IPv4 addresses per interface.
func karpenterVPCLimits(t *testing.T) map[string]vpcLimits {
	t.Helper()
	mod, err := kubeapi.KarpenterModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(mod, "pkg/providers/instancetype/zz_generated.vpclimits.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]vpcLimits{}
	entry := regexp.MustCompile(`(?s)\n\t"([a-z0-9.-]+)": \{(.*?)\n\t\},`)
	card := regexp.MustCompile(`MaximumNetworkInterfaces:\s+(\d+),\s+NetworkCardIndex:\s+(\d+),`)
	for _, m := range entry.FindAllStringSubmatch(string(src), -1) {
		var l vpcLimits
		l.ipv4PerInterface = atoiTest(t, regexp.MustCompile(`IPv4PerInterface:\s+(\d+)`).FindStringSubmatch(m[2])[1])
		l.defaultCard = atoiTest(t, regexp.MustCompile(`DefaultNetworkCardIndex:\s+(\d+)`).FindStringSubmatch(m[2])[1])
		for i, c := range card.FindAllStringSubmatch(m[2], -1) {
			if atoiTest(t, c[2]) != i {
				t.Fatalf("%s: card %d has index %s: the interface layout assumes cards 0..n-1", m[1], i, c[2])
			}
			l.perCard = append(l.perCard, atoiTest(t, c[1]))
		}
		out[m[1]] = l
	}
	if len(out) < 500 {
		t.Fatalf("read %d types from Karpenter's VPC limits", len(out))
	}
	return out
}

type vpcLimits struct {
	perCard                       []int
	ipv4PerInterface, defaultCard int
}

func atoiTest(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCatalogAgreesWithAWSNetworkCardData compares every entry's network cards and addresses with
// AWS's generated data: Karpenter's limits for every type they hold, and amazon-vpc-cni-k8s v1.20.4
// (pkg/vpc) as well for the types it already knew.
func TestCatalogAgreesWithAWSNetworkCardData(t *testing.T) {
	limits := karpenterVPCLimits(t)
	for _, it := range All() {
		t.Run(it.Name, func(t *testing.T) {
			l, ok := limits[it.Name]
			_, excepted := notInGeneratedData[it.Name]
			switch {
			case !ok && excepted:
				t.Skipf("no generated data: %s", notInGeneratedData[it.Name])
			case !ok:
				t.Fatalf("Karpenter's generated limits have no %s (if none ever will, say why in notInGeneratedData)", it.Name)
			case excepted:
				t.Errorf("%s is in the generated data now: remove it from notInGeneratedData", it.Name)
			}
			if len(l.perCard) != it.NetworkCards {
				t.Errorf("network cards: catalog %d, AWS %d", it.NetworkCards, len(l.perCard))
			}
			for i, max := range l.perCard {
				if max != it.MaxENIsPerCard {
					t.Errorf("card %d max interfaces: catalog %d, AWS %d", i, it.MaxENIsPerCard, max)
				}
			}
			if l.defaultCard != 0 {
				t.Errorf("AWS default network card is %d; the primary interface is laid out on card 0", l.defaultCard)
			}
			if l.ipv4PerInterface != it.IPv4PerInterface {
				t.Errorf("IPv4 per interface: catalog %d, AWS %d", it.IPv4PerInterface, l.ipv4PerInterface)
			}
			cards, err := vpc.GetNetworkCards(it.Name)
			if err != nil {
				return // a type newer than vpc-cni v1.20.4
			}
			if len(cards) != it.NetworkCards {
				t.Errorf("network cards: catalog %d, vpc-cni %d", it.NetworkCards, len(cards))
			}
			if v4, _ := vpc.GetIPv4Limit(it.Name); v4 != it.IPv4PerInterface {
				t.Errorf("IPv4 per interface: catalog %d, vpc-cni %d", it.IPv4PerInterface, v4)
			}
		})
	}
}

// TestCatalogFactsFromDesign checks the figures of shared/DESIGN.md §3 for the types it lists.
func TestCatalogFactsFromDesign(t *testing.T) {
	type facts struct {
		gpus, maxEFA, gbps int
		fm, gdr            bool
		interconnect       Interconnect
	}
	design := map[string]facts{
		"p4d.24xlarge":     {8, 4, 400, true, true, InterconnectNVSwitch},
		"p4de.24xlarge":    {8, 4, 400, true, true, InterconnectNVSwitch},
		"p5.48xlarge":      {8, 32, 3200, true, true, InterconnectNVSwitch},
		"p5e.48xlarge":     {8, 32, 3200, true, true, InterconnectNVSwitch},
		"p5en.48xlarge":    {8, 16, 3200, true, true, InterconnectNVSwitch},
		"p6-b200.48xlarge": {8, 8, 3200, true, true, InterconnectNVSwitch},
		"g6e.xlarge":       {1, 0, 20, false, false, InterconnectNone},
		"g6e.2xlarge":      {1, 0, 20, false, false, InterconnectNone},
		"g6e.4xlarge":      {1, 0, 20, false, false, InterconnectNone},
		"g6e.8xlarge":      {1, 1, 25, false, false, InterconnectNone},
		"g6e.16xlarge":     {1, 1, 35, false, false, InterconnectNone},
		"g6e.12xlarge":     {4, 1, 100, false, false, InterconnectPCIe},
		"g6e.24xlarge":     {4, 2, 200, false, false, InterconnectPCIe},
		"g6e.48xlarge":     {8, 4, 400, false, false, InterconnectPCIe},
	}
	for name, want := range design {
		it, ok := Lookup(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		got := facts{it.GPUCount, it.MaxEFA, it.NetworkGbps, it.FabricManager, it.GPUDirectRDMA, it.Interconnect}
		if got != want {
			t.Errorf("%s: catalog %+v, DESIGN.md %+v", name, got, want)
		}
	}
	if it, _ := Lookup("g6e.12xlarge"); it.GPUsCanP2P() {
		t.Error("g6e.12xlarge GPUs see each other as NODE (field measurement): no P2P")
	}
}

// TestCatalogInvariants holds for every entry, present and future.
func TestCatalogInvariants(t *testing.T) {
	for _, it := range All() {
		t.Run(it.Name, func(t *testing.T) {
			check := func(ok bool, format string, args ...any) {
				t.Helper()
				if !ok {
					t.Errorf(format, args...)
				}
			}
			check(it.GPUCount >= 1 && it.GPUMemoryGiB > 0 && it.VCPUs > 0 && it.MemoryGiB > 0, "incomplete sizes: %+v", it)
			check(it.LocalNVMeDisk > 0 && it.LocalNVMeGB > 0, "every catalog type has local NVMe")
			check(it.EFA == (it.MaxEFA > 0), "EFA support and max EFA disagree")
			check(it.MaxEFA <= it.NetworkCards, "one EFA per card: %d EFA on %d cards", it.MaxEFA, it.NetworkCards)
			efaCards := it.EFANetworkCards(it.MaxEFA)
			check(len(efaCards) == it.MaxEFA, "%d EFA cards listed for %d EFA", len(efaCards), it.MaxEFA)
			seen := map[int]bool{}
			for _, c := range efaCards {
				check(c >= 0 && c < it.NetworkCards && !seen[c], "EFA card %d is not one of %d cards, or listed twice", c, it.NetworkCards)
				seen[c] = true
			}
			check(!seen[0] || it.MaxENIsPerCard >= 2, "card 0 must hold the primary interface and the first EFA")
			check(it.CPUArch == ArchAMD64 || it.CPUArch == ArchARM64, "architecture %q", it.CPUArch)
			check(!it.GPUDirectRDMA || it.EFA, "GPUDirect RDMA is over EFA")
			check(it.FabricManager == (it.Interconnect == InterconnectNVSwitch && !it.MultiNodeNVLink()),
				"fabric manager is required exactly on NVSwitch types whose switches are in the instance (not an UltraServer's switch trays)")
			check((it.Interconnect == InterconnectNVSwitch) == (it.NVLinkGeneration > 0 && it.NVLinkGBps > 0), "NVLink figures only on NVSwitch types")
			check((it.GPUCount == 1) == (it.Interconnect == InterconnectNone), "single-GPU types have no interconnect")
			spread := it.NetworkCards
			if it.MaxEFA > 0 {
				spread = it.MaxEFA // p6-b300's card 0 carries its own ENA bandwidth beside the EFA figure
			}
			check(it.NetworkGbps > 0 && it.NetworkGbps%spread == 0, "bandwidth %d does not split evenly over %d EFA cards", it.NetworkGbps, spread)
		})
	}
}

// TestCatalogBandwidthAgreesWithKarpenter holds every type's sustained bandwidth to Karpenter's
// generated table (karpenter-provider-aws v1.15.2, pkg/providers/instancetype/
// zz_generated.bandwidth.go: EC2's baseline, in megabits), read from the module the test API
// server takes its CRDs from; and the advertised figure to it wherever the type does not burst.
func TestCatalogBandwidthAgreesWithKarpenter(t *testing.T) {
	mod, err := kubeapi.KarpenterModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(mod, "pkg/providers/instancetype/zz_generated.bandwidth.go"))
	if err != nil {
		t.Fatal(err)
	}
	upstream := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^\s+"([a-z0-9.-]+)":\s+(\d+),$`).FindAllStringSubmatch(string(src), -1) {
		mbit, _ := strconv.ParseFloat(m[2], 64)
		upstream[m[1]] = mbit / 1000
	}
	if len(upstream) < 500 {
		t.Fatalf("read %d types from Karpenter's bandwidth table", len(upstream))
	}
	for _, it := range All() {
		up, ok := upstream[it.Name]
		switch {
		case !ok:
			t.Errorf("%s: not in Karpenter's bandwidth table", it.Name)
		case it.BaselineGbps != up:
			t.Errorf("%s: baseline %g Gbps, Karpenter %g", it.Name, it.BaselineGbps, up)
		case !it.NetworkBurstOnly && float64(it.NetworkGbps) != up:
			t.Errorf("%s: %d Gbps, Karpenter's baseline %g (a burst type? set networkBurstOnly)", it.Name, it.NetworkGbps, up)
		case it.NetworkBurstOnly && float64(it.NetworkGbps) <= up:
			t.Errorf("%s: bursts to %d Gbps, no more than its baseline %g", it.Name, it.NetworkGbps, up)
		}
	}
}

// TestCatalogNamesAreEC2InstanceTypes holds every name to the EC2 API's own enum (aws-sdk-go-v2
// service/ec2 v1.344.3, types.InstanceType, generated from the EC2 API model).
func TestCatalogNamesAreEC2InstanceTypes(t *testing.T) {
	for _, it := range All() {
		if !slices.Contains(ec2types.InstanceType("").Values(), ec2types.InstanceType(it.Name)) {
			t.Errorf("%s is not an EC2 instance type in the API's enum", it.Name)
		}
	}
}
