package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// KeyEFAFailFast turns off, with a reason, the NCCL_NET that makes a job on an EFA pool fail at
// NCCL's initialisation instead of running over TCP sockets: {enabled: false, reason: "…"}.
const KeyEFAFailFast = ConfigNamespace + ":efaFailFast"

// EFAFailFastSettings is gpucluster:efaFailFast: on unless the stack turns it off, and then only
// with a reason, which the review shows.
type EFAFailFastSettings struct {
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason,omitempty"`
}

// The net plugin names aws-ofi-nccl gives NCCL. NCCL compares NCCL_NET with each net's name,
// ignoring case, and with it set uses that net or none: before 2.27 it fails with "Error:
// network %s not found." (src/net.cc, src/plugin/net.cc from 2.26), from 2.27 with "Failed to
// initialize any NET plugin" (src/plugin/net.cc), both ncclInvalidUsage; unset, it takes the
// first net that starts, its own IB and then Socket when the plugin fails (NVIDIA/nccl
// v2.18.6-1 to v2.30.4-1). aws-ofi-nccl named itself "AWS Libfabric" up to v1.12.x and
// "Libfabric" from v1.13.0 (aws/aws-ofi-nccl#530); from v1.13.0 a load-time constructor renames
// it back when NCCL_NET asks for "AWS Libfabric" (nvidia_plugin_name_fixup,
// src/nccl_ofi_interface_nvidia.cpp at v1.19.0, and unchanged at v1.21.1, the release EFA
// installer 1.50 bundles: "Libfabric" for every ncclNet version, v12 included, lines 662-803,
// the fixup at 841), so that name finds every version from v1.7.
const (
	OFIPluginName       = "Libfabric"
	OFIPluginLegacyName = "AWS Libfabric"
)

// ofiPluginRenamedIn is the aws-ofi-nccl release that named its plugin OFIPluginName.
var ofiPluginRenamedIn = pluginVersion{1, 13, 0}

// ofiEFAOnlyFrom is the first aws-ofi-nccl release that keeps to Libfabric's EFA provider by
// itself on AWS (src/platform-aws.c, provider_filter = "efa", v1.6.0; doc/efa-env-var.md:
// FI_PROVIDER=efa is to "Use for aws-ofi-nccl<=1.5.0 AND EFA-enabled GPU instances").
var ofiEFAOnlyFrom = pluginVersion{1, 6, 0}

type pluginVersion [3]int

func (v pluginVersion) less(w pluginVersion) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

func (v pluginVersion) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// ofiVersionInTag finds aws-ofi-nccl's version in an image tag that names it, as the tags of
// public.ecr.aws/hpc-cloud/nccl-tests do ("cuda13.0.2-efa1.48.0-ofiv1.19.0-ncclv2.30.4-1-…").
var ofiVersionInTag = regexp.MustCompile(`(?:^|[-_.])ofiv?(\d+)\.(\d+)(?:\.(\d+))?(?:$|[-_+])`)

// imageOFIVersion is the aws-ofi-nccl version an image's tag names, if it names one.
func imageOFIVersion(image string) (pluginVersion, bool) {
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	if !ok {
		return pluginVersion{}, false
	}
	tag, _, _ = strings.Cut(tag, "@")
	m := ofiVersionInTag.FindStringSubmatch(tag)
	if m == nil {
		return pluginVersion{}, false
	}
	var v pluginVersion
	for i, s := range m[1:] {
		v[i], _ = strconv.Atoi(s) // a missing patch is 0
	}
	return v, true
}

// efaFailFastEnv is what makes NCCL fail at initialisation on an EFA pool whose plugin cannot
// start (no EFA device in the pod, no plugin in the image) instead of carrying on over TCP
// sockets at a twentieth of the bandwidth, unnoticed until a run is slow: NCCL_NET, and
// FI_PROVIDER where the image's plugin predates keeping to EFA by itself.
func efaFailFastEnv(image string) []EnvVar {
	name, known := OFIPluginLegacyName, "the image's tag does not name its aws-ofi-nccl version, and every version from 1.7 answers to this name"
	v, ok := imageOFIVersion(image)
	if ok && !v.less(ofiPluginRenamedIn) {
		name, known = OFIPluginName, fmt.Sprintf("the name aws-ofi-nccl %s (the image's) gives its plugin", v)
	} else if ok {
		known = fmt.Sprintf("the name aws-ofi-nccl %s (the image's) gives its plugin", v)
	}
	env := []EnvVar{{Name: "NCCL_NET", Value: name, Source: "gpucluster",
		Why: "NCCL uses aws-ofi-nccl over EFA or fails at initialisation (\"network … not found\", \"Failed to initialize any NET plugin\") instead of silently falling back to TCP sockets when the plugin cannot start; " + known}}
	if ok && v.less(ofiEFAOnlyFrom) {
		env = append(env, EnvVar{Name: "FI_PROVIDER", Value: "efa", Source: "gpucluster",
			Why: fmt.Sprintf("aws-ofi-nccl %s (the image's) does not keep to Libfabric's EFA provider by itself (1.6.0 and later do)", v)})
	}
	return env
}

// FindingEFAFailFastOff: the stack turned off NCCL_NET on EFA pools.
const FindingEFAFailFastOff = "efa-fail-fast-off"

// setEFAFailFast gives the training pod of a pool with EFA interfaces the fail-fast environment,
// unless the stack turned it off or the pool's ncclEnv sets the variable itself (the user's
// value wins, as every override does).
func setEFAFailFast(p *PoolSpec, image string, s EFAFailFastSettings) {
	if p.Network.EFAInterfaces == 0 {
		return
	}
	if !s.Enabled {
		p.Findings = append(p.Findings, Finding{Severity: SeverityWarning, Code: FindingEFAFailFastOff,
			Message: fmt.Sprintf("%s is off (%q): a job whose aws-ofi-nccl cannot start runs over TCP sockets instead of failing; `gpucluster doctor` on its log says so", KeyEFAFailFast, s.Reason)})
		return
	}
	for _, e := range efaFailFastEnv(image) {
		if slices.ContainsFunc(p.TrainingPod.Env, func(have EnvVar) bool { return have.Name == e.Name }) {
			continue // the pool's ncclEnv sets it
		}
		at, _ := slices.BinarySearchFunc(p.TrainingPod.Env, e.Name, func(have EnvVar, name string) int { return strings.Compare(have.Name, name) })
		p.TrainingPod.Env = slices.Insert(p.TrainingPod.Env, at, e)
	}
}
