package topology

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// ClusterSettings are the stack's EKS control-plane settings.
type ClusterSettings struct {
	Name              string `json:"name"`
	KubernetesVersion string `json:"kubernetesVersion"`
	// UpgradePolicy is what EKS does when the version leaves standard support: EXTENDED keeps it
	// and bills extended support, STANDARD upgrades the cluster to the next version.
	UpgradePolicy string `json:"upgradePolicy"`
	// The private endpoint is always on: nodes reach the API server inside the VPC.
	EndpointPrivateAccess bool     `json:"endpointPrivateAccess"`
	EndpointPublicAccess  bool     `json:"endpointPublicAccess"`
	PublicAccessCIDRs     []string `json:"publicAccessCidrs"`
	// AdminRoleARNs get cluster-admin access entries (the identity running `pulumi up` is admin
	// already, as EKS's cluster creator).
	AdminRoleARNs []string `json:"adminRoleArns"`
	LogTypes      []string `json:"logTypes"`
	// ServiceCIDR is fixed so that custom-AMI nodes can be bootstrapped without reading it back.
	ServiceCIDR string      `json:"serviceCidr"`
	SystemNodes SystemNodes `json:"systemNodes"`
}

// SystemNodes is the small untainted node group every cluster needs: CoreDNS, the Karpenter
// controller and other cluster services do not tolerate the GPU taint and would stay Pending.
type SystemNodes struct {
	InstanceType string `json:"instanceType"`
	Count        int    `json:"count"`
}

// PrincipalIdentity is what EKS keys an access entry by, for comparing principals: the account,
// the kind (role or user) and the name, which IAM does not distinguish by case; an assumed-role
// session (arn:aws:sts::<account>:assumed-role/<role>/<session>, what GetCallerIdentity returns
// for a role) is its role. Paths are dropped: a session ARN does not carry its role's path.
func PrincipalIdentity(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return strings.ToLower(arn)
	}
	account, resource := parts[4], parts[5]
	segs := strings.Split(resource, "/")
	kind, name := segs[0], segs[len(segs)-1]
	if kind == "assumed-role" && len(segs) >= 3 {
		kind, name = "role", segs[1]
	}
	return account + ":" + kind + "/" + strings.ToLower(name)
}

// karpenterChartReplicas is the Karpenter chart's replica count (charts/karpenter/values.yaml
// `replicas: 2`, v1.15.2), whose pods carry a *required* anti-affinity per host
// (`podAntiAffinity ... topologyKey: kubernetes.io/hostname`): each replica needs a node of its own.
const karpenterChartReplicas = 2

// kueueReplicas is how many Kueue controller managers run where the system nodes allow: one
// leads, and both serve Kueue's admission webhooks, which are fail-closed for the jobs, so that
// the jobs' namespace still takes jobs while one system node is replaced.
const kueueReplicas = 2

// KueueReplicas is how many Kueue controller managers the system nodes hold, one per node
// (spread by hostname): two, or one on a single system node.
func (s SystemNodes) KueueReplicas() int { return min(kueueReplicas, s.Count) }

// KarpenterReplicas is how many Karpenter controllers the system nodes can hold: the chart's
// two, or one per system node when there are fewer. A second replica on a single system node
// would never be scheduled, and pulumi-kubernetes' await would fail `pulumi up` after ten
// minutes; one replica only loses the standby that takes over while its node is replaced.
func (s SystemNodes) KarpenterReplicas() int { return min(karpenterChartReplicas, s.Count) }

// VPCSettings say whether gpucluster creates the VPC, and which zones and subnets pools use.
type VPCSettings struct {
	Create            bool     `json:"create"`
	CIDR              string   `json:"cidr,omitempty"`
	AvailabilityZones []string `json:"availabilityZones"`
	VPCID             string   `json:"vpcId,omitempty"`
	// PrivateSubnets and PublicSubnets map zone to subnet id for an existing VPC.
	PrivateSubnets map[string]string `json:"privateSubnets,omitempty"`
	PublicSubnets  map[string]string `json:"publicSubnets,omitempty"`
	FlowLogs       FlowLogSettings   `json:"flowLogs"`
}

// FlowLogSettings say whether the VPC's traffic is recorded (VPC flow logs to CloudWatch Logs).
type FlowLogSettings struct {
	Enabled       bool   `json:"enabled"`
	TrafficType   string `json:"trafficType"`   // ALL, ACCEPT or REJECT
	RetentionDays int    `json:"retentionDays"` // how long CloudWatch Logs keeps the records
}

// Flow-log defaults: every flow, accepted and rejected (what an incident review needs), kept 90
// days, for the VPC gpucluster creates. An existing VPC's flow logs are its owner's to set, so
// they stay off there unless the stack enables them.
const (
	DefaultFlowLogTraffic   = "ALL"
	DefaultFlowLogRetention = 90
)

// flowLogTrafficTypes and cloudWatchRetentionDays are the values EC2 CreateFlowLogs
// (TrafficType) and CloudWatch Logs PutRetentionPolicy (retentionInDays) accept.
var (
	flowLogTrafficTypes     = []string{"ALL", "ACCEPT", "REJECT"}
	cloudWatchRetentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)

// Defaults for the stack-level settings.
const (
	DefaultVPCCIDR        = "10.0.0.0/16"
	DefaultServiceCIDR    = "172.20.0.0/16" // EKS's default service range
	DefaultSystemInstance = "m7i.large"
	DefaultSystemNodes    = 2
)

// ControlPlaneLogGroup is where EKS writes a cluster's control-plane logs (EKS UG "Send control
// plane logs to CloudWatch Logs": /aws/eks/<cluster>/cluster). EKS creates it on its own, with no
// retention, and it outlives the cluster; gpucluster creates it first, so the stack owns it.
func ControlPlaneLogGroup(cluster string) string { return "/aws/eks/" + cluster + "/cluster" }

// ControlPlaneLogRetentionDays keeps the audit trail of a quarter (CloudWatch Logs retention is one
// of a fixed set of day counts; 90 is one), then lets it expire instead of billing forever.
const ControlPlaneLogRetentionDays = 90

// AllLogTypes are every EKS control-plane log type (EKS API: LogSetup.types).
var AllLogTypes = []string{"api", "audit", "authenticator", "controllerManager", "scheduler"}

// Stack config keys for the settings (pools are KeyPools).
const (
	KeyRegion               = "aws:region"
	KeyClusterName          = ConfigNamespace + ":clusterName"
	KeyKubernetesVersion    = ConfigNamespace + ":kubernetesVersion"
	KeyEndpointPublicAccess = ConfigNamespace + ":endpointPublicAccess"
	KeyPublicAccessCIDRs    = ConfigNamespace + ":publicAccessCidrs"
	KeyAdminRoleARNs        = ConfigNamespace + ":adminRoleArns"
	KeySystemNodes          = ConfigNamespace + ":systemNodes"
	KeyVPCCIDR              = ConfigNamespace + ":vpcCidr"
	KeyAvailabilityZones    = ConfigNamespace + ":availabilityZones"
	KeyVPCID                = ConfigNamespace + ":vpcId"
	KeyPrivateSubnets       = ConfigNamespace + ":privateSubnets"
	KeyPublicSubnets        = ConfigNamespace + ":publicSubnets"
	KeyTrainingImage        = ConfigNamespace + ":trainingImage"
	KeyNVIDIADriverVersion  = ConfigNamespace + ":nvidiaDriverVersion"
	KeyFabricManagerImage   = ConfigNamespace + ":fabricManagerImage"
	KeyFlowLogs             = ConfigNamespace + ":flowLogs"
	KeyMaxHourlyCost        = ConfigNamespace + ":maxHourlyCost"
	KeyUpgradePolicy        = ConfigNamespace + ":upgradePolicy"
)

// The EKS cluster upgrade policies (EKS API UpgradePolicyRequest.supportType; EKS UG
// view-upgrade-policy): EXTENDED, EKS's default, keeps a version past its standard support and
// bills extended support; STANDARD upgrades the cluster to the next version in standard support
// instead, and never bills extended support.
const (
	UpgradePolicyExtended = "EXTENDED"
	UpgradePolicyStandard = "STANDARD"
)

// DefaultNVIDIADriverVersion is the driver the fabric-manager DaemonSet matches when the stack
// names none: the 580 driver that EKS's AL2023 NVIDIA images of the pinned release ship
// (AL2023Release; amazon-eks-ami CHANGELOG.md, "AMI Release v20260714": 580.159.03-1.amzn2023).
// A custom image must state its own, because fabric manager refuses to run against another driver.
const DefaultNVIDIADriverVersion = "580.159.03"

var driverVersionPattern = regexp.MustCompile(`^[0-9]{3}\.[0-9]+(\.[0-9]+)?$`)

// digestPinnedImage is an image reference pinned by its manifest's digest
// (registry/name[:tag]@sha256:<64 hex>; OCI image-spec descriptor.md, "Digests"): what a node
// pulls is exactly what was verified when the reference was written, whatever the tag points to
// later. Only such an image runs fabric manager, which runs privileged with the host's PIDs.
var digestPinnedImage = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$`)

// FabricManagerStatusFile is where gpucluster's fabric-manager DaemonSet writes, on the node,
// what became of its start ("started <version>" or "fail <why>"), and where the node's health
// gate reads it: the gate then fails the node with the reason at once instead of waiting out
// HealthWaitSeconds for a CUDA that cannot come. Under /run, the host's tmpfs, so a reboot
// leaves no word from an earlier boot.
const FabricManagerStatusFile = "/run/gpucluster/fabricmanager/status"

// DefaultTrainingImage runs nccl-tests with EFA, libfabric and aws-ofi-nccl: the image AWS's
// EFA-on-EKS examples use, pinned to a tag that names its versions (CUDA 13.0.2, EFA installer
// 1.48.0, aws-ofi-nccl 1.19.0, NCCL 2.30.4-1, nccl-tests 2.18.3: the build arguments of AWS's
// nccl-tests Dockerfile, awsome-distributed-training micro-benchmarks, commit 16da837e, whose
// FSDP test case builds on this tag) instead of the moving :latest. It is built for linux/amd64
// and linux/arm64 (buildspec.yaml) with native code for DefaultImageComputeCapabilities only
// ("PTX is not embedded"). CUDA 13 needs the 580 driver, which the pinned EKS AL2023 release
// ships. The training pod template carries it until a stack names its own.
const DefaultTrainingImage = "public.ecr.aws/hpc-cloud/nccl-tests:cuda13.0.2-efa1.48.0-ofiv1.19.0-ncclv2.30.4-1-testsv2.18.3"

// AL2023Image is the small image gpucluster's node-side scripts run in (the health gate's
// decision, the EFA counters reader): bash, coreutils and curl without installing anything (the
// AL2023 container image ships curl-minimal and bash: AL2023 user guide "curl-minimal" page, and
// the image's package list in docker-library/repo-info), from ECR Public, which EKS nodes reach
// without Docker Hub's pull limits; pinned to a dated tag.
const AL2023Image = "public.ecr.aws/amazonlinux/amazonlinux:2023.10.20260120.4"

// UnconfirmedTrainingImage is the EFA installer 1.50 stack's tag (CUDA 13.1.2, EFA installer
// 1.50.0 with aws-ofi-nccl 1.21.1 and libfabric 2.6, NCCL 2.31.2-1, nccl-tests 2.20.0, the same
// NVCC_GENCODE: awslabs/awsome-distributed-training #1255, micro-benchmarks/nccl-tests/
// buildspec.yaml), which would be the default once it is known to be published. Nothing gpucluster
// can read confirms that: the nccl-tests README of that change says to use the tag "after that tag
// has been published", the only file that names a digest for it is in an unmerged pull request
// (#1259), and public.ecr.aws cannot be asked from here. So DefaultTrainingImage stays, and
// REVIEW.md says so; a stack can name this tag in gpucluster:trainingImage, and its NCCL_NET
// (efaFailFastEnv) and the doctor's reading of aws-ofi-nccl 1.21.1 hold for it.
const UnconfirmedTrainingImage = "public.ecr.aws/hpc-cloud/nccl-tests:cuda13.1.2-efa1.50.0-ofiv1.21.1-ncclv2.31.2-1-testsv2.20.0"

// DefaultImageComputeCapabilities are the GPU architectures the default image's NCCL and
// nccl-tests carry code for (its Dockerfile's NVCC_GENCODE: sm_80, sm_86, sm_89, sm_90, sm_100,
// sm_103); a GPU outside them (the RTX PRO 6000 Blackwell's 12.0) finds no kernel to run.
var DefaultImageComputeCapabilities = []string{"8.0", "8.6", "8.9", "9.0", "10.0", "10.3"}

// minCUDA13Driver is the oldest driver branch CUDA 13 runs on (NVIDIA CUDA 13.0 release notes:
// driver 580 or newer).
const minCUDA13Driver = 580

var (
	regionPattern      = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	clusterNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	versionPattern     = regexp.MustCompile(`^1\.([0-9]+)$`)
	principalPattern   = regexp.MustCompile(`^arn:aws(-[a-z]+)*:iam::[0-9]{12}:(role|user)/.+$`)
	vpcIDPattern       = regexp.MustCompile(`^vpc-([0-9a-f]{8}|[0-9a-f]{17})$`)
	subnetIDPattern    = regexp.MustCompile(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)
)

// MaxClusterNameLength keeps "<cluster>-<pool>" node group names within EKS's 63 characters.
const MaxClusterNameLength = 38

// StackName is the stack a file belongs to: "dev" for stacks/Pulumi.dev.yaml.
func StackName(file string) string {
	base := filepath.Base(file)
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	return strings.TrimPrefix(base, "Pulumi.")
}

// settingsDefaults fills every setting the stack file leaves out.
func settingsDefaults(stack, region string) (ClusterSettings, VPCSettings) {
	c := ClusterSettings{
		Name:                  stack,
		KubernetesVersion:     DefaultKubernetesVersion,
		UpgradePolicy:         UpgradePolicyExtended,
		EndpointPrivateAccess: true,
		EndpointPublicAccess:  true,
		PublicAccessCIDRs:     []string{"0.0.0.0/0"},
		AdminRoleARNs:         []string{},
		LogTypes:              append([]string(nil), AllLogTypes...),
		ServiceCIDR:           DefaultServiceCIDR,
		SystemNodes:           SystemNodes{InstanceType: DefaultSystemInstance, Count: DefaultSystemNodes},
	}
	v := VPCSettings{Create: true, CIDR: DefaultVPCCIDR,
		FlowLogs: FlowLogSettings{Enabled: true, TrafficType: DefaultFlowLogTraffic, RetentionDays: DefaultFlowLogRetention}}
	if region != "" {
		v.AvailabilityZones = []string{region + "a", region + "b"}
	}
	return c, v
}

// validateSettings checks the stack-level settings; key names the config key of each problem.
func validateSettings(region string, c ClusterSettings, v VPCSettings) []Problem {
	var ps problems
	switch {
	case region == "":
		ps.add(KeyRegion, "add aws:region: <region> (e.g. us-east-1) to the config block", "the stack names no AWS region")
	case !regionPattern.MatchString(region):
		ps.add(KeyRegion, "write a region name such as us-east-1", "%q is not an AWS region name", region)
	case !KnownRegion(region):
		ps.add(KeyRegion, "use one of: "+strings.Join(awsRegions, ", "),
			"%q is not an AWS region%s (regions of pulumi-aws v6.83.4, the provider that deploys the stack)", region, Suggest(region, awsRegions))
	case regionProblem(region) != "":
		ps.add(KeyRegion, "use one of: "+regionList(), "%s", regionProblem(region))
	}
	if !clusterNamePattern.MatchString(c.Name) || len(c.Name) > MaxClusterNameLength {
		ps.add(KeyClusterName, fmt.Sprintf("set %s to at most %d lowercase letters, digits and '-', starting with a letter", KeyClusterName, MaxClusterNameLength),
			"cluster name %q (the stack name by default) cannot name the EKS cluster and its node groups", c.Name)
	}
	if problem, fix := kubernetesVersionProblem(c.KubernetesVersion); problem != "" {
		ps.add(KeyKubernetesVersion, fix, "%s", problem)
	}
	if c.UpgradePolicy != UpgradePolicyExtended && c.UpgradePolicy != UpgradePolicyStandard {
		ps.add(KeyUpgradePolicy, "use "+UpgradePolicyExtended+" (EKS's default) or "+UpgradePolicyStandard, "unknown upgrade policy %q", c.UpgradePolicy)
	}
	for i, cidr := range c.PublicAccessCIDRs {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			ps.add(fmt.Sprintf("%s[%d]", KeyPublicAccessCIDRs, i), "write an IPv4 CIDR such as 203.0.113.0/24", "%q is not a CIDR", cidr)
		}
	}
	if len(c.PublicAccessCIDRs) > maxPublicAccessCIDRs {
		ps.add(KeyPublicAccessCIDRs, fmt.Sprintf("list at most %d CIDRs: merge neighbouring ranges, or reach the API through the private endpoint", maxPublicAccessCIDRs),
			"%d CIDRs given; EKS takes at most %d public endpoint access CIDR ranges per cluster (a quota AWS does not raise)", len(c.PublicAccessCIDRs), maxPublicAccessCIDRs)
	}
	if c.EndpointPublicAccess && len(c.PublicAccessCIDRs) == 0 {
		ps.add(KeyPublicAccessCIDRs, "list the CIDRs allowed to reach the public endpoint, or set endpointPublicAccess: false",
			"a public endpoint needs at least one allowed CIDR")
	}
	seen := map[string]int{}
	for i, arn := range c.AdminRoleARNs {
		if !principalPattern.MatchString(arn) {
			ps.add(fmt.Sprintf("%s[%d]", KeyAdminRoleARNs, i), "write an IAM role or user ARN: arn:aws:iam::123456789012:role/name",
				"%q is not an IAM role or user ARN", arn)
			continue
		}
		// One access entry per principal (EKS CreateAccessEntry: "You can't specify the same ARN
		// in more than one access entry"; the second fails with ResourceInUseException). IAM
		// names are not case-sensitive.
		if j, dup := seen[PrincipalIdentity(arn)]; dup {
			ps.add(fmt.Sprintf("%s[%d]", KeyAdminRoleARNs, i), fmt.Sprintf("remove it: %s[%d] names the same principal", KeyAdminRoleARNs, j),
				"%q is listed twice; EKS refuses a second access entry for one principal (ResourceInUseException)", arn)
			continue
		}
		seen[PrincipalIdentity(arn)] = i
	}
	if c.SystemNodes.Count < 1 {
		ps.add(KeySystemNodes+".count", "set count to 1 or more (2 keeps CoreDNS available during node replacement)",
			"a cluster needs untainted system nodes: CoreDNS and the Karpenter controller do not run on tainted GPU nodes")
	}
	if !KnownEC2InstanceType(c.SystemNodes.InstanceType) {
		ps.add(KeySystemNodes+".instanceType", "write an EC2 instance type such as "+DefaultSystemInstance,
			"%q is not an EC2 instance type%s", c.SystemNodes.InstanceType, Suggest(c.SystemNodes.InstanceType, ec2InstanceTypeNames()))
	}
	validateVPC(&ps, region, v)
	return ps
}

func validateVPC(ps *problems, region string, v VPCSettings) {
	if f := v.FlowLogs; f.Enabled {
		if !slices.Contains(flowLogTrafficTypes, f.TrafficType) {
			ps.add(KeyFlowLogs+".trafficType", "use ALL, ACCEPT or REJECT", "unknown flow-log traffic type %q", f.TrafficType)
		}
		if !slices.Contains(cloudWatchRetentionDays, f.RetentionDays) {
			ps.add(KeyFlowLogs+".retentionDays", fmt.Sprintf("use one of CloudWatch Logs' retention periods: %v", cloudWatchRetentionDays),
				"CloudWatch Logs cannot keep records for %d days", f.RetentionDays)
		}
	}
	zoneKey := KeyAvailabilityZones
	if !v.Create {
		zoneKey = KeyPrivateSubnets
		if !vpcIDPattern.MatchString(v.VPCID) {
			ps.add(KeyVPCID, "write the id as EC2 prints it: vpc- and 8 or 17 hex digits", "%q is not a VPC id", v.VPCID)
		}
		if len(v.PrivateSubnets) < 2 {
			ps.add(KeyPrivateSubnets, "map at least two Availability Zones to private subnets: {us-east-1a: subnet-…, us-east-1b: subnet-…}",
				"EKS needs subnets in at least two zones; %d private subnet(s) given", len(v.PrivateSubnets))
		}
		for _, m := range []struct {
			key     string
			subnets map[string]string
		}{{KeyPrivateSubnets, v.PrivateSubnets}, {KeyPublicSubnets, v.PublicSubnets}} {
			for _, z := range sortedKeys(m.subnets) {
				if !subnetIDPattern.MatchString(m.subnets[z]) {
					ps.add(m.key+"."+z, "write the id as EC2 prints it: subnet- and 8 or 17 hex digits", "%q is not a subnet id", m.subnets[z])
				}
			}
		}
	} else {
		prefix, err := netip.ParsePrefix(v.CIDR)
		switch {
		case err != nil || !prefix.Addr().Is4():
			ps.add(KeyVPCCIDR, "write an IPv4 CIDR such as 10.0.0.0/16", "%q is not an IPv4 CIDR", v.CIDR)
		case prefix.Bits() < 16 || prefix.Bits() > 20:
			ps.add(KeyVPCCIDR, "use a prefix between /16 and /20", "a /%d VPC cannot hold the subnets (AWS allows /16 to /28; gpucluster carves /19s from a /16)", prefix.Bits())
		}
		// Without a region the default zones are unknown; the region error already says so.
		if (region != "" || len(v.AvailabilityZones) > 0) && (len(v.AvailabilityZones) < 2 || len(v.AvailabilityZones) > maxZones) {
			ps.add(zoneKey, fmt.Sprintf("list 2 to %d zones of the region", maxZones),
				"EKS needs subnets in at least two Availability Zones; %d given", len(v.AvailabilityZones))
		}
	}
	seen := map[string]bool{}
	for i, z := range v.AvailabilityZones {
		key := fmt.Sprintf("%s[%d]", zoneKey, i)
		if !v.Create {
			key = zoneKey + "." + z
		}
		if seen[z] {
			ps.add(key, "list each zone once", "%q is listed twice", z)
		}
		seen[z] = true
		if region != "" && !(strings.HasPrefix(z, region) && len(z) == len(region)+1) {
			ps.add(key, fmt.Sprintf("use a zone of %s, such as %sa", region, region), "%q is not a zone of region %s", z, region)
		}
	}
}

// maxZones: a /16 VPC is carved into 8 /19 blocks, 6 for private subnets, one for public ones.
const maxZones = 6

// resolvePoolZones places each pool in zones of the VPC: the pool's own (which must be VPC
// zones), else the VPC's first zone. A pool is one topology unit: EFA traffic stays in one
// subnet and a cluster placement group in one zone; an ENA pool is spread only on request.
func resolvePoolZones(p Profile, vpcZones []string) ([]string, []Problem) {
	if len(p.AvailabilityZones) > 0 {
		var ps problems
		for i, z := range p.AvailabilityZones {
			if !contains(vpcZones, z) {
				ps.add(fmt.Sprintf("availabilityZones[%d]", i), "use one of the VPC's zones: "+strings.Join(vpcZones, ", "),
					"zone %q has no subnet in this stack's VPC", z)
			}
		}
		return p.AvailabilityZones, ps
	}
	if len(vpcZones) == 0 {
		return nil, nil
	}
	return vpcZones[:1], nil
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
