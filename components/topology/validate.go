package topology

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

var (
	// EC2 IDs: an 8- or 17-hex-digit suffix (EC2 "Resource IDs" documentation).
	reservationIDPattern = regexp.MustCompile(`^cr-([0-9a-f]{8}|[0-9a-f]{17})$`)
	amiIDPattern         = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)
	// Availability Zone names: region name plus a letter (us-east-1a, us-gov-west-1b).
	zonePattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+[a-z]$`)
)

// maxPartitions is EC2's limit of partitions per Availability Zone in a partition placement group.
const maxPartitions = 7

// Validate returns every problem of a profile, or nil. It never stops at the first problem.
func Validate(p Profile) []Problem {
	var ps problems
	it, known := catalog.Lookup(p.InstanceType)
	if !known {
		ps.add("instanceType", "use one of: "+strings.Join(catalog.Names(), ", "),
			"unknown instance type %q%s", p.InstanceType, Suggest(p.InstanceType, catalog.Names()))
	}
	validateScaling(&ps, p)
	validatePlacement(&ps, p)
	validateCapacity(&ps, p)
	validateImage(&ps, p, it, known)
	validateShm(&ps, p, it, known)
	validateNodeMetadata(&ps, p)
	validateNCCLEnv(&ps, p)
	if known {
		validateFabric(&ps, p, it)
		validatePodLayout(&ps, p, it)
		validateUltraServer(&ps, p, it)
	}
	return ps
}

// ValidateDeployable returns what a pool needs beyond a valid topology before anything can be
// created: the facts of one deployment that no built-in profile can hold (the reservation).
func ValidateDeployable(p Profile) []Problem {
	var ps problems
	if p.Capacity.Reserved() && p.CapacityReservationID == "" {
		ps.add("capacityReservationId", "set capacityReservationId to the reservation's id (cr-…, from the EC2 console or describe-capacity-reservations)",
			"capacity %s needs the id of the reservation to launch into", p.Capacity)
	}
	return ps
}

func validateScaling(ps *problems, p Profile) {
	switch {
	case p.MinNodes == p.MaxNodes && p.MaxNodes < 1:
		ps.add("nodes", "set nodes to 1 or more (or minNodes: 0 with maxNodes >= 1 and provisioner: karpenter to scale from zero)",
			"node count %d is below 1", p.MaxNodes)
	case p.MinNodes < 0:
		ps.add("minNodes", "set minNodes to 0 or more", "minNodes %d is negative", p.MinNodes)
	case p.MaxNodes < 1:
		ps.add("maxNodes", "set maxNodes to 1 or more", "maxNodes %d is below 1", p.MaxNodes)
	case p.MinNodes > p.MaxNodes:
		ps.add("minNodes", fmt.Sprintf("lower minNodes to at most %d or raise maxNodes", p.MaxNodes),
			"minNodes %d is greater than maxNodes %d", p.MinNodes, p.MaxNodes)
	}
	if p.Provisioner == ProvisionerKarpenter && p.MinNodes > 0 {
		ps.add("minNodes", "set minNodes: 0 and maxNodes to the most nodes the pool may have, or use provisioner: managed-node-group",
			"Karpenter launches nodes for pending pods and keeps no minimum, so minNodes %d cannot be honoured", p.MinNodes)
	}
	switch p.Provisioner {
	case ProvisionerManagedNodeGroup:
	case ProvisionerKarpenter:
		if p.AMIFamily == AMIBottlerocketNVIDIA {
			ps.add("amiFamily", "use al2023-nvidia or a custom image with Karpenter, or provisioner: managed-node-group for Bottlerocket",
				"gpucluster pins Karpenter's image to a known EKS AL2023 release; it has no pinned Bottlerocket release to select")
		}
	default:
		ps.add("provisioner", "use managed-node-group or karpenter", "unknown provisioner %q", p.Provisioner)
	}
}

func validatePlacement(ps *problems, p Profile) {
	switch p.Placement {
	case PlacementCluster, PlacementNone:
		if p.Partitions != 0 {
			ps.add("partitions", "remove partitions, or set placement: partition",
				"partitions is only meaningful with placement: partition (placement is %q)", p.Placement)
		}
	case PlacementPartition:
		if p.Partitions < 1 || p.Partitions > maxPartitions {
			ps.add("partitions", fmt.Sprintf("set partitions between 1 and %d", maxPartitions),
				"placement: partition needs 1 to %d partitions (EC2's limit per Availability Zone), got %d", maxPartitions, p.Partitions)
		}
	default:
		ps.add("placement", "use cluster, partition or none", "unknown placement %q", p.Placement)
	}
	seen := map[string]bool{}
	for i, z := range p.AvailabilityZones {
		key := fmt.Sprintf("availabilityZones[%d]", i)
		if !zonePattern.MatchString(z) {
			ps.add(key, "write an Availability Zone name such as us-east-1a", "%q is not an Availability Zone name", z)
		}
		if seen[z] {
			ps.add(key, "list each Availability Zone once", "%q is listed twice", z)
		}
		seen[z] = true
	}
	if len(p.AvailabilityZones) > 1 {
		if p.Placement == PlacementCluster {
			ps.add("availabilityZones", "keep exactly one Availability Zone, or set placement: partition or none",
				"a cluster placement group lives in one Availability Zone; %d were given", len(p.AvailabilityZones))
		} else if p.Fabric == FabricEFA {
			// EC2 user guide (efa.html, limitations): EFA OS-bypass traffic cannot cross subnets.
			ps.add("availabilityZones", "keep exactly one Availability Zone for an EFA pool, or set fabric: ena-only",
				"EFA traffic stays inside one subnet, so an EFA pool cannot span %d Availability Zones", len(p.AvailabilityZones))
		}
	}
}

func validateCapacity(ps *problems, p Profile) {
	switch p.Capacity {
	case CapacityOnDemand, CapacitySpot:
		if p.CapacityReservationID != "" {
			ps.add("capacityReservationId", "remove capacityReservationId, or set capacity: odcr or capacity-block",
				"a reservation id is only used with capacity odcr or capacity-block (capacity is %q)", p.Capacity)
		}
	case CapacityODCR, CapacityCapacityBlock:
		switch {
		case p.CapacityReservationID == "":
			// A deployment fact, not a topology one: a built-in profile may name the capacity and
			// leave the reservation to the stack (ValidateDeployable asks for it there).
		case !reservationIDPattern.MatchString(p.CapacityReservationID):
			ps.add("capacityReservationId", "write the id as EC2 prints it: cr- and 17 hex digits",
				"%q is not a capacity reservation id", p.CapacityReservationID)
		}
	default:
		ps.add("capacity", "use on-demand, spot, odcr or capacity-block", "unknown capacity %q", p.Capacity)
	}
	validateReservationGroup(ps, p)
}

// validateReservationGroup checks a pool's placementGroupName: the cluster placement group its On-
// Demand Capacity Reservation was created in. Only an ODCR can be created in a placement group,
// and only in a cluster one (EC2 API CreateCapacityReservation PlacementGroupArn: "the cluster
// placement group in which to create the Capacity Reservation"; a Capacity Block is placed by
// AWS), which lives in one Availability Zone, as the reservation does. A group name is up to 255
// ASCII characters (EC2 API CreatePlacementGroup GroupName).
func validateReservationGroup(ps *problems, p Profile) {
	if p.PlacementGroupName == "" {
		return
	}
	switch {
	case p.Capacity != CapacityODCR:
		ps.add("placementGroupName", "remove placementGroupName, or set capacity: odcr with the id of the reservation made in that group",
			"a placement group name is only for an On-Demand Capacity Reservation created in that group (capacity is %q)", p.Capacity)
	case !placementGroupNamePattern.MatchString(p.PlacementGroupName):
		ps.add("placementGroupName", "write the group's name as EC2 shows it: 1 to 255 printable ASCII characters",
			"%q is not a placement group name", p.PlacementGroupName)
	case p.Placement == PlacementPartition:
		ps.add("placement", "remove placement, or set placement: cluster",
			"a Capacity Reservation is made only in a cluster placement group, not a partition one")
	case len(p.AvailabilityZones) > 1:
		ps.add("availabilityZones", "keep the one Availability Zone of the reservation and its group",
			"the reservation and its cluster placement group are in one Availability Zone; %d were given", len(p.AvailabilityZones))
	}
}

// placementGroupNamePattern: up to 255 ASCII characters, none of them a control character.
var placementGroupNamePattern = regexp.MustCompile(`^[\x20-\x7e]{1,255}$`)

func validateImage(ps *problems, p Profile, it catalog.InstanceType, known bool) {
	switch p.AMIFamily {
	case AMIAL2023NVIDIA, AMIBottlerocketNVIDIA:
		if p.AMIID != "" {
			ps.add("amiId", "remove amiId, or set amiFamily: custom",
				"amiId is only used with amiFamily: custom (the %s image is resolved from EKS's published parameters)", p.AMIFamily)
		}
	case AMICustom:
		switch {
		case p.AMIID == "":
			ps.add("amiId", "set amiId to the image id (ami-…)", "amiFamily: custom needs an amiId")
		case !amiIDPattern.MatchString(p.AMIID):
			ps.add("amiId", "write the id as EC2 prints it: ami- and 8 or 17 hex digits", "%q is not an AMI id", p.AMIID)
		}
	default:
		ps.add("amiFamily", "use al2023-nvidia, bottlerocket-nvidia or custom", "unknown amiFamily %q", p.AMIFamily)
	}
	switch p.FabricManager {
	case FabricManagerAuto, FabricManagerHost:
	case FabricManagerDaemonSet:
		if known && !it.FabricManager {
			ps.add("fabricManager", "remove fabricManager (auto decides), or choose an NVSwitch type",
				"%s has no NVSwitch, so there is no fabric to manage", it.Name)
		}
		if p.AMIFamily.RunsHostFabricManager() {
			ps.add("fabricManager", "remove fabricManager: daemonset (auto uses the host's), or use amiFamily: custom with an image that has none",
				"the %s image already runs nv-fabricmanager on the host; a second one in a DaemonSet conflicts with it", p.AMIFamily)
		}
	default:
		ps.add("fabricManager", "use auto, daemonset or host", "unknown fabricManager %q", p.FabricManager)
	}
	// NVLink 5 (fourth-generation NVSwitch) needs the NVLink Subnet Manager beside fabric manager,
	// with the host's ib_umad module and the NVSwitch management interface: the host's job. The
	// DaemonSet runs fabric manager only, so a pool that would need it is refused.
	if known && it.FabricManager && it.NVLinkGeneration >= 5 && !p.AMIFamily.RunsHostFabricManager() && p.FabricManager != FabricManagerHost {
		ps.add("fabricManager", "use amiFamily: al2023-nvidia (its image runs fabric manager and NVLSM), or set fabricManager: host if your image runs both",
			"%s (NVLink %d) needs the NVLink Subnet Manager beside fabric manager; gpucluster's fabric-manager DaemonSet does not run it", it.Name, it.NVLinkGeneration)
	}
}

func validateShm(ps *problems, p Profile, it catalog.InstanceType, known bool) {
	q, err := resource.ParseQuantity(p.ShmSize)
	switch {
	case err != nil:
		ps.add("shmSize", "write a Kubernetes quantity such as 64Gi", "cannot parse %q as a size: %v", p.ShmSize, err)
	case q.Sign() <= 0:
		ps.add("shmSize", "set a positive size such as 64Gi", "shmSize %q is not positive", p.ShmSize)
	case q.Cmp(minShm) < 0:
		ps.add("shmSize", "write the size with its unit, such as 64Gi",
			"shmSize %q is %d bytes, below %s: smaller than Docker's default /dev/shm, which already fails NCCL's shared-memory transport", p.ShmSize, q.Value(), minShm.String())
	case known && q.Value() >= int64(it.MemoryGiB)<<30:
		ps.add("shmSize", fmt.Sprintf("set shmSize well below %dGi", it.MemoryGiB),
			"/dev/shm is a memory emptyDir: %s does not fit in the %d GiB of a %s", p.ShmSize, it.MemoryGiB, it.Name)
	case known && p.PodsPerNode >= 0 && p.PodsPerNode <= it.GPUCount:
		if _, memory := trainingPodCPUMemory(it, podsPerNode(p, it), p.Provisioner); q.Cmp(memory) >= 0 {
			ps.add("shmSize", fmt.Sprintf("set shmSize well below %s", memory.String()),
				"/dev/shm is a memory emptyDir and counts within the training pod's memory limit of %s on %s: %s leaves nothing for the job", memory.String(), it.Name, p.ShmSize)
		}
	}
}

// minShm: a /dev/shm below Docker's 64 MiB default is a missing unit ("64" is 64 bytes), not a
// choice: NCCL's SHM transport fails on Docker's default already.
var minShm = resource.MustParse("64Mi")

// ncclEnvName: ncclEnv carries NCCL's, libfabric's and aws-ofi-nccl's variables, all upper case
// (NCCL_*, FI_*, OFI_NCCL_*); anything else is a typo or belongs in the pod spec.
var ncclEnvName = regexp.MustCompile(`^(NCCL|FI|OFI_NCCL)_[A-Z0-9_]+$`)

func validateNCCLEnv(ps *problems, p Profile) {
	for _, k := range sortedKeys(p.NCCLEnv) {
		if !ncclEnvName.MatchString(k) {
			fix := "use an NCCL_, FI_ or OFI_NCCL_ variable in upper case, such as NCCL_DEBUG"
			if up := strings.ToUpper(k); ncclEnvName.MatchString(up) {
				fix = "write it in upper case: " + up
			}
			ps.add("ncclEnv."+k, fix, "%q is not an NCCL, libfabric or aws-ofi-nccl variable", k)
		}
	}
}

func validateNodeMetadata(ps *problems, p Profile) {
	for _, k := range sortedKeys(p.Labels) {
		key := "labels." + k
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			ps.add(key, "use a label key like example.com/team", "invalid label key: %s", strings.Join(msgs, "; "))
			continue
		}
		if msgs := validation.IsValidLabelValue(p.Labels[k]); len(msgs) > 0 {
			ps.add(key, "use at most 63 characters of letters, digits, '-', '_' and '.'", "invalid label value %q: %s", p.Labels[k], strings.Join(msgs, "; "))
		}
		if reservedLabelKey(k) {
			ps.add(key, "choose a key outside kubernetes.io and k8s.io (node.kubernetes.io/ and kubelet.kubernetes.io/ are allowed)",
				"the kubelet refuses to set labels under kubernetes.io or k8s.io (NodeRestriction), so the node would never register")
		}
		if strings.HasPrefix(k, labelDomain) {
			ps.add(key, "choose a key outside "+labelDomain, "%s labels are set by gpucluster itself", labelDomain)
		}
	}
	for i, t := range p.Taints {
		key := fmt.Sprintf("taints[%d]", i)
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			ps.add(key+".key", "use a taint key like example.com/dedicated", "invalid taint key %q: %s", t.Key, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			ps.add(key+".value", "use at most 63 characters of letters, digits, '-', '_' and '.'", "invalid taint value %q", t.Value)
		}
		if !validEffect(t.Effect) {
			ps.add(key+".effect", "use NoSchedule, PreferNoSchedule or NoExecute", "unknown taint effect %q", t.Effect)
		}
		if t.Key == gpuTaint.Key && t.Effect == gpuTaint.Effect {
			ps.add(key, "remove it: every GPU pool already carries "+gpuTaint.Key+":"+gpuTaint.Effect, "duplicates gpucluster's GPU taint")
		}
	}
	for i, tol := range p.Tolerations {
		key := fmt.Sprintf("tolerations[%d]", i)
		switch tol.Operator {
		case "Equal":
			if tol.Key == "" {
				ps.add(key+".key", "set the key, or use operator: Exists to tolerate every taint", "operator Equal needs a key")
			}
		case "Exists":
			if tol.Value != "" {
				ps.add(key+".value", "remove the value, or use operator: Equal", "operator Exists takes no value")
			}
		default:
			ps.add(key+".operator", "use Equal or Exists", "unknown toleration operator %q", tol.Operator)
		}
		if tol.Effect != "" && !validEffect(tol.Effect) {
			ps.add(key+".effect", "use NoSchedule, PreferNoSchedule, NoExecute or leave it empty for all", "unknown effect %q", tol.Effect)
		}
	}
	// Every taint that repels pods must be tolerated by the pieces that have to run there: the
	// device plugins (or the node never advertises its GPUs and EFA devices) and the training pod.
	tolerations := poolTolerations(p)
	for i, t := range p.Taints {
		if t.Effect == "PreferNoSchedule" || !validEffect(t.Effect) {
			continue
		}
		if !toleratedByAny(tolerations, t) {
			ps.add(fmt.Sprintf("taints[%d]", i),
				fmt.Sprintf("add tolerations: [{key: %s, operator: Exists, effect: %s}] to the pool, or remove the taint", t.Key, t.Effect),
				"no toleration matches taint %s: the device plugins and training pods would never schedule on these nodes", taintString(t))
		}
	}
}

func validateFabric(ps *problems, p Profile, it catalog.InstanceType) {
	switch p.Fabric {
	case FabricEFA:
		if !it.EFA {
			ps.add("fabric", "set fabric: ena-only, or choose a type with EFA (g6e.8xlarge and up, p4d, p5…)",
				"%s does not support EFA", it.Name)
			return
		}
		switch n := p.EFAInterfaces; {
		case n < 0:
			ps.add("efaInterfaces", "remove efaInterfaces (default: one per network card) or set a positive count", "efaInterfaces %d is negative", n)
		case n > it.MaxEFA:
			ps.add("efaInterfaces", fmt.Sprintf("set efaInterfaces to at most %d, or remove it (default: one per network card)", it.MaxEFA),
				"%s takes at most %d EFA interfaces (one per EFA network card: cards %v), not %d", it.Name, it.MaxEFA, it.EFANetworkCards(it.MaxEFA), n)
		}
	case FabricENAOnly:
		if p.EFAInterfaces != 0 {
			ps.add("efaInterfaces", "remove efaInterfaces, or set fabric: efa", "efaInterfaces is set but fabric is ena-only")
		}
	default:
		ps.add("fabric", "use efa or ena-only", "unknown fabric %q", p.Fabric)
	}
}

// validatePodLayout enforces the pod-per-GPU rule: every pod gets at least one EFA device of its
// own. The EFA device plugin grants each device to one pod, so a pod without one has no EFA at
// all and NCCL silently falls back to NET/Socket. On p4d (8 GPUs, 4 EFA) one pod per GPU
// therefore means at most 4 pods, which the user must state with podsPerNode: 4 (the field
// experiment's shape), accepting 4 idle GPUs per node.
func validatePodLayout(ps *problems, p Profile, it catalog.InstanceType) {
	switch p.PodLayout {
	case PodPerNode:
		if p.PodsPerNode > 1 {
			ps.add("podsPerNode", "remove podsPerNode, or set podLayout: pod-per-gpu",
				"podLayout pod-per-node runs exactly one pod per node, not %d", p.PodsPerNode)
		}
	case PodPerGPU:
		pods := p.PodsPerNode
		if pods == 0 {
			pods = it.GPUCount
		}
		if pods < 1 || pods > it.GPUCount {
			ps.add("podsPerNode", fmt.Sprintf("set podsPerNode between 1 and %d", it.GPUCount),
				"%s has %d GPUs, so it cannot run %d one-GPU pods", it.Name, it.GPUCount, pods)
			return
		}
		efa := efaCount(p, it)
		if p.Fabric == FabricEFA && it.EFA && pods > efa {
			key := "podsPerNode"
			if p.PodsPerNode == 0 {
				key = "podLayout"
			}
			ps.add(key,
				fmt.Sprintf("set podsPerNode: %d (leaves %d GPUs idle per node), or podLayout: pod-per-node (recommended), or fabric: ena-only",
					efa, it.GPUCount-efa),
				"%s has %d EFA devices for %d one-GPU pods: the EFA device plugin grants each device to one pod, and pods without one fall back to NET/Socket",
				it.Name, efa, pods)
		}
	default:
		ps.add("podLayout", "use pod-per-node (recommended) or pod-per-gpu", "unknown podLayout %q", p.PodLayout)
	}
}

func efaCount(p Profile, it catalog.InstanceType) int {
	if p.Fabric != FabricEFA || !it.EFA {
		return 0
	}
	if p.EFAInterfaces > 0 {
		return p.EFAInterfaces
	}
	return it.MaxEFA
}

func validEffect(e string) bool {
	return e == "NoSchedule" || e == "PreferNoSchedule" || e == "NoExecute"
}

func reservedLabelKey(k string) bool {
	prefix, _, found := strings.Cut(k, "/")
	if !found {
		return false
	}
	for _, allowed := range []string{"node.kubernetes.io", "kubelet.kubernetes.io"} {
		if prefix == allowed || strings.HasSuffix(prefix, "."+allowed) {
			return false
		}
	}
	for _, reserved := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == reserved || strings.HasSuffix(prefix, "."+reserved) {
			return true
		}
	}
	return false
}

func toleratedByAny(tols []Toleration, t Taint) bool {
	for _, tol := range tols {
		if tol.Tolerates(t) {
			return true
		}
	}
	return false
}

func taintString(t Taint) string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}
