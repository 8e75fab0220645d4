package topology

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// ConfigNamespace is the Pulumi project name: stack config keys are "gpucluster:<key>".
const ConfigNamespace = "gpucluster"

// KeyPools is the stack config key that lists the GPU pools.
const KeyPools = ConfigNamespace + ":pools"

// maxPoolNameLength keeps derived AWS names (node group, launch template, placement group:
// "<cluster>-<pool>-…") inside EKS's 63-character node group name limit.
const maxPoolNameLength = 24

// Stack is a parsed, validated stack file: its settings and its pools, each a built-in profile
// with overrides.
type Stack struct {
	File          string
	Name          string
	Region        string
	Cluster       ClusterSettings
	VPC           VPCSettings
	TrainingImage string
	DriverVersion string
	// FabricManagerImage is the stack's fabric-manager image, and fabricManagerImageLine where
	// the file sets it.
	FabricManagerImage     string
	fabricManagerImageLine int
	Pools                  []Pool
	// Warnings are what AWS may refuse unless an adjustable quota is raised.
	Warnings ConfigErrors
	// Environments are the ESC environments the stack file imports: the engine merges their
	// values; the offline commands cannot see them.
	Environments []string
	// Secrets are the config keys whose values are Pulumi secrets (engine configuration only).
	Secrets []string
	// MaxHourlyCost is the most the stack may cost per hour at every pool's maximum (USD; 0: no
	// guard), and maxCostLine where the file sets it.
	MaxHourlyCost float64
	maxCostLine   int
	// versionLine is where the file sets kubernetesVersion, else the config line.
	versionLine int
	// driverLine is where the file sets nvidiaDriverVersion, else 0.
	driverLine    int
	Expiry, Owner string // see StackSpec
	Benchmarks    BenchmarkSettings
	EFAFailFast   EFAFailFastSettings
	// Observability is the metrics the file chooses (KeyObservability; "" when it chooses none).
	Observability string
}

// Pool is one GPU pool of a stack.
type Pool struct {
	Name    string
	Profile Profile
	// sizeKey and sizeLine are where the file sets the pool's size (maxNodes, else nodes, else
	// the pool's profile line), for errors about it.
	sizeKey  string
	sizeLine int
	// typeKey and typeLine are where the file chooses the pool's GPU (instanceType, else its
	// profile), for errors about what runs on that GPU.
	typeKey  string
	typeLine int
}

// Pulumi's own top-level keys of a stack file (Pulumi.<stack>.yaml).
var stackFileKeys = []string{"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"}

// gpuclusterKeys are the keys gpucluster reads from the stack config.
var gpuclusterKeys = []string{KeyPools, KeyClusterName, KeyKubernetesVersion, KeyEndpointPublicAccess, KeyPublicAccessCIDRs,
	KeyAdminRoleARNs, KeySystemNodes, KeyVPCCIDR, KeyAvailabilityZones, KeyVPCID, KeyPrivateSubnets, KeyPublicSubnets, KeyTrainingImage,
	KeyNVIDIADriverVersion, KeyFabricManagerImage, KeyFlowLogs, KeyMaxHourlyCost, KeyExpiresAt, KeyOwner, KeyBenchmarks, KeyUpgradePolicy, KeyEFAFailFast, KeyObservability}

// EnvironmentNote is what the offline commands say of a stack that imports ESC environments, or "".
func EnvironmentNote(spec StackSpec) string {
	if len(spec.Environments) == 0 {
		return ""
	}
	return fmt.Sprintf("%s imports ESC environment(s) %s: their values are merged by the Pulumi engine under pulumi up; this offline reading uses the file alone",
		spec.Source, strings.Join(spec.Environments, ", "))
}

// LoadStack reads, validates and derives a stack file as on the instant at (see DeriveStack). On
// bad input it returns ConfigErrors listing every problem of the file, each with file, line, key
// and fix.
func LoadStack(path string, at time.Time) (StackSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return StackSpec{}, ConfigErrors{{File: path, Key: "(file)", Message: err.Error(), Fix: "check the path; stacks live in stacks/Pulumi.<stack>.yaml"}}
	}
	st, err := ParseStack(path, data)
	if err != nil {
		return StackSpec{}, err
	}
	return DeriveStack(st, at)
}

// DeriveStack derives every pool of a parsed stack as on the instant at: the day the plan is
// made or `pulumi up` runs, which the support window and the cost guard price the control plane
// on. The caller reads its clock once and passes the instant down; nothing here reads the wall
// clock, so a plan and the up that follows judge a stack alike on the same instant.
func DeriveStack(st Stack, at time.Time) (StackSpec, error) {
	spec := StackSpec{Source: st.File, Stack: st.Name, Region: st.Region, Cluster: st.Cluster, VPC: st.VPC, TrainingImage: st.TrainingImage, NVIDIADriverVersion: st.DriverVersion,
		FabricManagerImage: st.FabricManagerImage, Pools: make([]PoolSpec, 0, len(st.Pools)), Warnings: st.Warnings, Environments: st.Environments, MaxHourlyCost: st.MaxHourlyCost,
		Expiry: st.Expiry, Owner: st.Owner, Benchmarks: st.Benchmarks, At: at}
	for _, pool := range st.Pools {
		ps, err := Derive(pool.Name, pool.Profile)
		if err != nil {
			return StackSpec{}, err
		}
		setEFAFailFast(&ps, st.TrainingImage, st.EFAFailFast)
		if st.Benchmarks.Enabled {
			ps.Benchmark = deriveBenchmark(ps, st.Benchmarks, st.TrainingImage)
		}
		ps.NodeRepair = deriveNodeRepair(pool.Profile.NodeRepair, st.Benchmarks.Enabled, ps.Instance.CPUArch, ps.Provisioner)
		if err := setNVIDIAModuleOptions(&ps, st, pool); err != nil {
			return StackSpec{}, err
		}
		if pool.Profile.Stopped {
			ps = ps.atZero(Finding{Severity: SeverityInfo, Code: FindingStopped,
				Message: "the stack file stops the pool (stopped: true): it stays at zero nodes until the key is removed and pulumi up runs"})
		}
		spec.Pools = append(spec.Pools, ps)
	}
	spec.Observability = deriveObservability(st.Observability, st.Region, spec.Pools)
	if err := checkSupportWindow(&spec, st, at); err != nil {
		return StackSpec{}, err
	}
	if err := checkCostGuard(&spec, st, at); err != nil {
		return StackSpec{}, err
	}
	if err := checkSubnetCapacity(spec, st); err != nil {
		return StackSpec{}, err
	}
	if err := checkPoolsAgainstStack(&spec, st); err != nil {
		return StackSpec{}, err
	}
	return spec, nil
}

// checkCostGuard refuses a stack whose hourly cost at every pool's maximum exceeds its
// maxHourlyCost, naming the pools that drive it. A pool with no price is a warning: the guard
// cannot bound it.
func checkCostGuard(spec *StackSpec, st Stack, now time.Time) error {
	if st.MaxHourlyCost <= 0 {
		return nil
	}
	c := EstimateCost(*spec, now)
	for _, l := range c.Lines {
		if !l.Known {
			spec.Warnings = append(spec.Warnings, ConfigError{File: st.File, Line: st.maxCostLine, Key: KeyMaxHourlyCost,
				Message: fmt.Sprintf("the cost guard cannot price %s: %s", l.Item, l.Note), Fix: "bound that pool's size yourself, or pick a type with a listed price"})
		}
	}
	if c.AtMost <= st.MaxHourlyCost {
		return nil
	}
	var drivers []string
	for _, l := range costDrivers(c) {
		drivers = append(drivers, fmt.Sprintf("pool %s (%s: $%.2f per hour)", l.Pool, l.Item, l.AtMost))
	}
	fixed := c.AtMost
	for _, l := range costDrivers(c) {
		fixed -= l.AtMost
	}
	region := ""
	if st.Region != catalog.PriceRegion {
		region = fmt.Sprintf(" (%s list prices; %s prices differ)", catalog.PriceRegion, st.Region)
	}
	fix := "raise " + KeyMaxHourlyCost + " if the team agreed to it"
	if d := costDrivers(c); len(d) > 0 {
		fix += ", or lower maxNodes of pool " + d[0].Pool
	}
	return ConfigErrors{{File: st.File, Line: st.maxCostLine, Key: KeyMaxHourlyCost, Fix: fix,
		Message: fmt.Sprintf("the stack costs up to $%.2f per hour at every pool's maximum%s, over the $%.2f agreed: %s, and $%.2f for the control plane, NAT, system nodes and volumes",
			c.AtMost, region, st.MaxHourlyCost, strings.Join(drivers, ", "), fixed)}}
}

// ParseStack parses and validates a Pulumi stack file. It returns ConfigErrors with every
// problem found: syntax, unknown keys, wrong types and every profile rule.
func ParseStack(file string, data []byte) (Stack, error) {
	r := &reader{file: file}
	root, ok := r.document(data)
	if !ok {
		return Stack{File: file}, r.result()
	}
	r.refuseSecrets(root)
	r.environments = environments(root)
	st, err := r.stack(root)
	st.Environments = r.environments
	return st, err
}

// unseenEnvironments is what an offline error about a key missing from the file adds when the
// stack imports ESC environments: the key may well be set there, where offline cannot look.
func (r *reader) unseenEnvironments() string {
	if r.origins != nil || len(r.environments) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the stack imports ESC environment(s) %s, which may set it, but the offline commands read only the file: set it in the file to plan offline)",
		strings.Join(r.environments, ", "))
}

// refuseSecrets: offline, a Pulumi secret in the file is ciphertext only Pulumi can decrypt.
func (r *reader) refuseSecrets(root *yaml.Node) {
	config := MappingValue(root, "config")
	if config == nil {
		return
	}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		// Only what gpucluster reads: another namespace's secret (aws:secretKey, set with
		// `pulumi config set --secret`) is the engine's business, not the offline commands'.
		if top := topKey(path); path != "config" && top != KeyRegion && !strings.HasPrefix(top, ConfigNamespace+":") {
			return
		}
		if isSecure(n) {
			r.fail(n.Line, path, "plan it with `pulumi preview`, which decrypts it, or keep this value in plain config",
				"%s is a Pulumi secret, and gpucluster's offline commands cannot decrypt it", path)
			r.unreadable = append(r.unreadable, path) // what follows from the unknown value is not an error of its own
			return
		}
		for i, c := range n.Content {
			switch n.Kind {
			case yaml.MappingNode:
				if i%2 == 1 {
					walk(c, childPath(path, n.Content[i-1].Value))
				}
			case yaml.SequenceNode:
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(config, "config")
}

// stack reads a stack from its document: the config block's settings and pools.
func (r *reader) stack(root *yaml.Node) (Stack, error) {
	file := r.file
	st := Stack{File: file}
	if !r.expectKind(root, yaml.MappingNode, "(file)", "a mapping with a config: block") {
		return st, r.result()
	}
	settings := map[string]*yaml.Node{}
	lines := map[string]int{}
	var region string
	configLine := root.Line
	r.eachKey(root, "", stackFileKeys, func(k string, key, val *yaml.Node) {
		if k != "config" || !r.expectKind(val, yaml.MappingNode, "config", "a mapping of namespaced keys") {
			return
		}
		configLine = key.Line
		for i := 0; i+1 < len(val.Content); i += 2 {
			key, v := val.Content[i], val.Content[i+1]
			ns, _, namespaced := strings.Cut(key.Value, ":")
			switch {
			case !namespaced:
				r.fail(key.Line, keyText(key), "write it as gpucluster:"+keyText(key)+" (or with the provider's namespace, e.g. aws:region)",
					"config keys are namespaced")
			case key.Value == KeyRegion:
				region, _ = r.scalarString(v, KeyRegion)
				lines[KeyRegion] = key.Line
			case ns != ConfigNamespace && nearNamespace(ns):
				r.fail(key.Line, key.Value, "rename it to "+ConfigNamespace+":"+strings.SplitN(key.Value, ":", 2)[1],
					"unknown config namespace %q (did you mean %q?): gpucluster would never read this key", ns, ConfigNamespace)
			case ns != ConfigNamespace:
				// Another namespace (aws:, kubernetes:, pulumi:): the provider's to read.
			case !contains(gpuclusterKeys, key.Value):
				r.unknownKey(key.Line, key.Value, key.Value, gpuclusterKeys)
			default:
				settings[key.Value] = v
				lines[key.Value] = key.Line
			}
		}
	})
	st.Name, st.Region = StackName(file), region
	st.versionLine = configLine
	if l, ok := lines[KeyKubernetesVersion]; ok {
		st.versionLine = l
	}
	st.Cluster, st.VPC = r.settings(settings, st.Name, region, lines)
	st.DriverVersion = DefaultNVIDIADriverVersion
	if v, line, ok := r.matching(settings, KeyNVIDIADriverVersion, driverVersionPattern,
		"write the version nvidia-smi prints on the node image, such as 580.159.03", "%q is not an NVIDIA driver version"); ok {
		st.DriverVersion, st.driverLine = v, line
	}
	if v, line, ok := r.matching(settings, KeyFabricManagerImage, digestPinnedImage,
		"pin the image by its digest, such as 111122223333.dkr.ecr.us-west-2.amazonaws.com/nvidia-fabricmanager@sha256:<64 hex digits> (docker buildx imagetools inspect prints it)",
		"%q is not pinned by digest: fabric manager runs privileged on the host, so only an image whose content is fixed runs it"); ok {
		st.FabricManagerImage, st.fabricManagerImageLine = v, line
	}
	if n := settings[KeyMaxHourlyCost]; n != nil {
		// Whole dollars: Pulumi's project schema types the key as an integer.
		if usd, ok := r.scalarInt(n, KeyMaxHourlyCost); ok && usd <= 0 {
			r.fail(n.Line, KeyMaxHourlyCost, "write the most the stack may cost per hour, in whole US dollars, such as 250", "%d is not a positive number of dollars", usd)
		} else if ok {
			st.MaxHourlyCost, st.maxCostLine = float64(usd), lines[KeyMaxHourlyCost]
		}
	}
	if n := settings[KeyExpiresAt]; n != nil {
		if v, ok := r.scalarString(n, KeyExpiresAt); ok {
			if t, err := parseExpiry(v); err != nil {
				r.fail(n.Line, KeyExpiresAt, "write an RFC 3339 time to the minute, such as 2026-11-22T18:00:00Z, or run gpucluster expire --in 8h",
					"%q is not an expiry time: %v", v, err)
			} else {
				st.Expiry = t.Format(time.RFC3339)
			}
		}
	}
	if n := settings[KeyOwner]; n != nil {
		if v, ok := r.scalarString(n, KeyOwner); ok {
			if !ownerPattern.MatchString(v) {
				r.fail(n.Line, KeyOwner, "use at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit (a tag and a label value)",
					"%q cannot be a tag and label value", v)
			}
			st.Owner = v
		}
	}
	st.TrainingImage = DefaultTrainingImage
	if n := settings[KeyTrainingImage]; n != nil {
		if img, ok := r.scalarString(n, KeyTrainingImage); ok {
			if strings.TrimSpace(img) == "" || strings.ContainsAny(img, " \t\n") {
				r.fail(n.Line, KeyTrainingImage, "write an image reference such as registry/name:tag", "%q is not an image reference", img)
			}
			st.TrainingImage = img
		}
	}
	if n := settings[KeyBenchmarks]; n != nil {
		st.Benchmarks = r.benchmarks(n, lines)
	}
	st.EFAFailFast = EFAFailFastSettings{Enabled: true}
	if n := settings[KeyEFAFailFast]; n != nil {
		st.EFAFailFast = r.efaFailFast(n, lines)
	}
	if n := settings[KeyObservability]; n != nil {
		st.Observability = r.observability(n, st.Benchmarks.Enabled)
	}
	for _, prob := range validateSettings(region, st.Cluster, st.VPC) {
		line, inherited := problemLine(prob.Key, lines)
		if inherited {
			line = configLine
		}
		if _, inFile := lines[prob.Key]; !inFile {
			prob.Message += r.unseenEnvironments()
		}
		r.fail(line, prob.Key, prob.Fix, "%s", prob.Message)
	}
	poolsNode := settings[KeyPools]
	if poolsNode == nil {
		if len(r.errs) == 0 {
			r.fail(configLine, KeyPools, "add "+KeyPools+": with at least one pool (- name: gpu, profile: dev)", "the stack declares no GPU pool%s", r.unseenEnvironments())
		}
		return st, r.result()
	}
	st.Pools = r.pools(poolsNode, st.VPC.AvailabilityZones)
	r.checkNodeGroupQuota(st.Pools, lines[KeyPools])
	r.checkFabricManagerImage(st, lines)
	sortErrors(r.warns)
	st.Warnings = r.warns
	return st, r.result()
}

// matching reads a string setting that must match pattern; one that does not is an error at its
// line (message: a format of the value). ok: the file sets it.
func (r *reader) matching(settings map[string]*yaml.Node, key string, pattern *regexp.Regexp, fix, message string) (v string, line int, ok bool) {
	n := settings[key]
	if n == nil {
		return "", 0, false
	}
	if v, ok = r.scalarString(n, key); ok && !pattern.MatchString(v) {
		r.fail(n.Line, key, fix, message, v)
	}
	return v, n.Line, ok
}

// checkNodeGroupQuota: every managed-node-group pool and the system node group is one managed
// node group of the cluster.
func (r *reader) checkNodeGroupQuota(pools []Pool, line int) {
	groups := 1
	for _, p := range pools {
		if p.Profile.Provisioner == ProvisionerManagedNodeGroup {
			groups++
		}
	}
	if groups > QuotaNodeGroupsPerCluster {
		r.warn(line, KeyPools, "request a higher "+quotaNameNodeGroups+" in Service Quotas before pulumi up, or use provisioner: karpenter for some pools",
			"%d managed node groups (the pools and the system group) exceed the default %s of %d", groups, quotaNameNodeGroups, QuotaNodeGroupsPerCluster)
	}
}

// reader collects every error and warning of one file.
type reader struct {
	file  string
	errs  ConfigErrors
	warns ConfigErrors
	// With the engine's configuration (ParseEngineConfig): where each top-level key's value came
	// from when not plainly from the file, the secret values to keep out of messages, and the
	// ESC environments the file imports.
	origins      map[string]string
	secretValues map[string]bool
	environments []string
	// unreadable are the keys (paths) whose values are ciphertext offline: reported once each.
	unreadable []string
}

// isUnreadable: a key at or below an unreadable one, after its own error was recorded.
func (r *reader) isUnreadable(key string) bool {
	for _, p := range r.unreadable {
		if key == p || strings.HasPrefix(key, p+".") || strings.HasPrefix(key, p+"[") {
			return true
		}
	}
	return false
}

func (r *reader) fail(line int, key, fix, format string, args ...any) {
	if r.isUnreadable(key) {
		return
	}
	msg := r.redact(fmt.Sprintf(format, args...)) + r.originNote(key)
	r.errs = append(r.errs, ConfigError{File: r.file, Line: line, Key: key, Message: msg, Fix: r.redact(fix)})
}

// warn records what AWS may refuse unless a quota is raised: the stack stays valid.
func (r *reader) warn(line int, key, fix, format string, args ...any) {
	msg := r.redact(fmt.Sprintf(format, args...)) + r.originNote(key)
	r.warns = append(r.warns, ConfigError{File: r.file, Line: line, Key: key, Message: msg, Fix: r.redact(fix)})
}

func (r *reader) result() error {
	if len(r.errs) == 0 {
		return nil
	}
	sortErrors(r.errs)
	return r.errs
}

var kindNames = map[yaml.Kind]string{
	yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list", yaml.ScalarNode: "a single value", yaml.AliasNode: "an alias",
}

func (r *reader) expectKind(n *yaml.Node, kind yaml.Kind, key, want string) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		*n = *n.Alias
	}
	if n.Kind == kind && (kind != yaml.ScalarNode || n.Tag != "!!null") {
		return true
	}
	got := kindNames[n.Kind]
	if n.Tag == "!!null" {
		got = "empty"
	}
	r.fail(n.Line, key, "write "+want, "expected %s, found %s", want, got)
	return false
}

// eachKey walks a mapping, reporting unknown keys, and calls fn for known ones (duplicates
// were reported and dropped when the document was read).
func (r *reader) eachKey(m *yaml.Node, prefix string, known []string, fn func(k string, key, val *yaml.Node)) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		if !contains(known, key.Value) {
			r.unknownKey(key.Line, prefix+keyText(key), key.Value, known)
			continue
		}
		fn(key.Value, key, val)
	}
}

// keyText is how a mapping key is named in errors: empty and non-scalar keys get a visible name.
func keyText(k *yaml.Node) string {
	switch {
	case k.Kind != yaml.ScalarNode:
		return "(non-text key)"
	case k.Value == "":
		return `""`
	}
	return k.Value
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var yamlLinePattern = regexp.MustCompile(`line (\d+)`)

// nearNamespace: a config namespace one or two edits from gpucluster's is a typo whose keys
// Pulumi would pass and gpucluster never read.
func nearNamespace(ns string) bool {
	d := editDistance(strings.ToLower(ns), ConfigNamespace)
	return d > 0 && d <= 2 || d == 0 && ns != ConfigNamespace
}

func yamlErrorLine(err error) int {
	if m := yamlLinePattern.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func (r *reader) pools(n *yaml.Node, vpcZones []string) []Pool {
	if !r.expectKind(n, yaml.SequenceNode, KeyPools, "a list of pools (- name: …, profile: …)") {
		return nil
	}
	if len(n.Content) == 0 {
		r.fail(n.Line, KeyPools, "add at least one pool (- name: gpu, profile: dev)", "the pool list is empty")
		return nil
	}
	var pools []Pool
	names := map[string]int{}
	for i, item := range n.Content {
		key := fmt.Sprintf("%s[%d]", KeyPools, i)
		pool, ok := r.pool(item, key, vpcZones)
		if first, dup := names[pool.Name]; dup && pool.Name != "" {
			r.fail(item.Line, key+".name", "give every pool its own name", "pool name %q is already used by %s[%d]", pool.Name, KeyPools, first)
			continue
		}
		names[pool.Name] = i
		if ok {
			pools = append(pools, pool)
		}
	}
	return pools
}

// pool parses one pool: name, the profile it starts from, and overrides. It reports the pool's
// profile problems at the line of the key that set the value, or at `profile:` when the value
// is inherited from the built-in.
func (r *reader) pool(n *yaml.Node, key string, vpcZones []string) (Pool, bool) {
	if !r.expectKind(n, yaml.MappingNode, key, "a pool mapping (name: …, profile: …)") {
		return Pool{}, false
	}
	lines := map[string]int{}
	var name, profileName string
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := n.Content[i], n.Content[i+1]
		switch kn.Value {
		case "name":
			name, _ = r.scalarString(v, key+".name")
			lines["name"] = kn.Line
		case "profile":
			profileName, _ = r.scalarString(v, key+".profile")
			lines["profile"] = kn.Line
		}
	}
	ok := true
	if name == "" {
		r.fail(n.Line, key+".name", "add name: <pool>, lowercase letters, digits and '-'", "the pool has no name")
		ok = false
	} else if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 || len(name) > maxPoolNameLength {
		r.fail(lines["name"], key+".name", fmt.Sprintf("use at most %d lowercase letters, digits and '-', starting with a letter", maxPoolNameLength),
			"pool name %q cannot be used in AWS and Kubernetes names", name)
		ok = false
	}
	base, found := BuiltinProfile(profileName)
	switch {
	case profileName == "":
		r.fail(n.Line, key+".profile", "add profile: <name>, one of: "+strings.Join(BuiltinProfileNames(), ", "), "the pool names no profile to start from")
		return Pool{Name: name}, false
	case !found:
		r.fail(lines["profile"], key+".profile", "use one of: "+strings.Join(BuiltinProfileNames(), ", "),
			"unknown profile %q%s", profileName, Suggest(profileName, BuiltinProfileNames()))
		return Pool{Name: name}, false
	}
	p := base
	explicit := r.overrides(n, key, &p, lines)
	if p.InstanceType != base.InstanceType || p.MinNodes != base.MinNodes || p.MaxNodes != base.MaxNodes {
		// The profile's sentence speaks of its own type and size: the pool is described as what it is.
		p.Description = fmt.Sprintf("the %s topology on %s × %s (the profile's: %s × %s)",
			profileName, nodeRange(p.MinNodes, p.MaxNodes), p.InstanceType, nodeRange(base.MinNodes, base.MaxNodes), base.InstanceType)
	}
	before := len(r.errs)
	problems := append(Validate(p), ValidateDeployable(p)...)
	if len(problems) == 0 {
		var zoneProblems []Problem
		p.AvailabilityZones, zoneProblems = resolvePoolZones(p, vpcZones)
		problems = zoneProblems
	}
	for _, prob := range problems {
		line, inherited := problemLine(prob.Key, lines)
		msg := prob.Message
		if inherited {
			msg += fmt.Sprintf(" (%s is inherited from profile %s)", topKey(prob.Key), profileName)
		}
		r.fail(line, key+"."+prob.Key, prob.Fix, "%s", msg)
	}
	if p.Provisioner == ProvisionerManagedNodeGroup && p.MaxNodes > QuotaNodesPerNodeGroup {
		k := "maxNodes"
		if _, ok := lines[k]; !ok {
			k = "nodes"
		}
		r.warn(lines[k], key+"."+k, "request a higher "+quotaNameNodes+" in Service Quotas before pulumi up, or split the pool",
			"%d nodes exceed the default %s of %d", p.MaxNodes, quotaNameNodes, QuotaNodesPerNodeGroup)
	}
	// A reservation made in a cluster placement group names that group (placementGroupName,
	// validateReservationGroup); any other reservation is placed by AWS alone.
	if explicit["placement"] && p.Capacity.Reserved() && p.Placement != PlacementNone && p.PlacementGroupName == "" {
		r.fail(lines["placement"], key+".placement", "remove placement: the reservation decides where instances run (an ODCR made in a cluster placement group: name the group in placementGroupName)",
			"capacity %s is already placed by AWS; a %s placement group would cause insufficient-capacity launches", p.Capacity, p.Placement)
	}
	pool := Pool{Name: name, Profile: p, sizeKey: key + ".maxNodes", sizeLine: lines["maxNodes"], typeKey: key + ".profile", typeLine: lines["profile"]}
	if line, set := lines["instanceType"]; set {
		pool.typeKey, pool.typeLine = key+".instanceType", line
	}
	if _, set := lines["maxNodes"]; !set {
		pool.sizeKey, pool.sizeLine = key+".nodes", lines["nodes"]
		if _, set := lines["nodes"]; !set {
			pool.sizeLine = lines["profile"]
		}
	}
	return pool, ok && len(r.errs) == before
}

// relatedKeys: when a problem's own key is inherited, the user's change that made it a problem
// is usually one of these (amiFamily: custom makes the missing amiId a problem).
var relatedKeys = map[string][]string{
	"amiId":                 {"amiFamily"},
	"capacityReservationId": {"capacity"},
	"placementGroupName":    {"capacity"},
	"partitions":            {"placement"},
	"fabric":                {"instanceType"},
	"efaInterfaces":         {"fabric", "instanceType"},
	"podLayout":             {"podsPerNode", "efaInterfaces", "instanceType", "fabric"},
	"podsPerNode":           {"podLayout", "efaInterfaces", "instanceType"},
	"shmSize":               {"instanceType"},
	"availabilityZones":     {"placement", "fabric"},
	"fabricManager":         {"amiFamily", "instanceType"},
	"nodes":                 {"minNodes", "maxNodes"},
	"minNodes":              {"provisioner", "maxNodes", "nodes"},
	"maxNodes":              {"minNodes", "nodes"},
}

// problemLine finds the line of a problem key: the key itself or a parent key when the pool sets
// it; else the related key the pool sets; else the `profile:` line it was inherited from
// (inherited reports that last case).
func problemLine(key string, lines map[string]int) (line int, inherited bool) {
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := lines[k]; ok {
			return l, false
		}
	}
	for _, rel := range relatedKeys[key] {
		if l, ok := lines[rel]; ok {
			return l, false
		}
	}
	return lines["profile"], true
}

// topKey is the pool key a problem path starts with ("taints" of "taints[1].effect").
func topKey(k string) string {
	if i := strings.IndexAny(k, ".["); i > 0 {
		return k[:i]
	}
	return k
}

func parentKey(k string) string {
	if i := strings.LastIndexAny(k, ".["); i > 0 {
		return k[:i]
	}
	return ""
}

// ConfigKeys lists the stack config keys gpucluster reads (besides aws:region), for the
// documentation and the engine's configuration.
func ConfigKeys() []string { return append([]string(nil), gpuclusterKeys...) }

// requiredKeys are the keys every stack must set: the core refuses a stack without them.
var requiredKeys = []string{KeyPools}

// RequiredConfigKeys lists the keys every stack must set, and so the only keys Pulumi.yaml may
// declare: the Pulumi CLI requires every declared project key that has no default
// (pkg/v3 workspace/config.go, mergeConfig) and refuses a stack without it before the program
// runs, while the defaults of the optional keys are the core's (a Pulumi default would be a second
// home for them, and some, such as the cluster name, depend on the stack).
func RequiredConfigKeys() []string { return append([]string(nil), requiredKeys...) }

// nodeRange is a node count as a person says it: "4", or "0 to 3".
func nodeRange(min, max int) string {
	if min == max {
		return fmt.Sprint(max)
	}
	return fmt.Sprintf("%d to %d", min, max)
}
