package topology

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// settings reads the stack-level keys over their defaults. Problems of form (types, unknown
// nested keys) are reported here; problems of value are validateSettings'.
func (r *reader) settings(nodes map[string]*yaml.Node, stack, region string, lines map[string]int) (ClusterSettings, VPCSettings) {
	c, v := settingsDefaults(stack, region)
	if n := nodes[KeyClusterName]; n != nil {
		c.Name, _ = r.scalarString(n, KeyClusterName)
	}
	if n := nodes[KeyKubernetesVersion]; n != nil {
		c.KubernetesVersion, _ = r.scalarString(n, KeyKubernetesVersion)
	}
	if n := nodes[KeyUpgradePolicy]; n != nil {
		c.UpgradePolicy, _ = r.scalarString(n, KeyUpgradePolicy)
	}
	if n := nodes[KeyEndpointPublicAccess]; n != nil {
		if b, ok := r.scalarBool(n, KeyEndpointPublicAccess); ok {
			c.EndpointPublicAccess = b
		}
	}
	if n := nodes[KeyPublicAccessCIDRs]; n != nil {
		if l, ok := r.stringList(n, KeyPublicAccessCIDRs, KeyPublicAccessCIDRs, lines); ok {
			c.PublicAccessCIDRs = l
		}
	}
	if n := nodes[KeyAdminRoleARNs]; n != nil {
		if l, ok := r.stringList(n, KeyAdminRoleARNs, KeyAdminRoleARNs, lines); ok {
			c.AdminRoleARNs = l
		}
	}
	if n := nodes[KeySystemNodes]; n != nil && r.expectKind(n, yaml.MappingNode, KeySystemNodes, "a mapping {instanceType: m7i.large, count: 2}") {
		r.eachKey(n, KeySystemNodes+".", []string{"instanceType", "count"}, func(k string, kn, val *yaml.Node) {
			lines[KeySystemNodes+"."+k] = kn.Line
			switch k {
			case "instanceType":
				if s, ok := r.scalarString(val, KeySystemNodes+".instanceType"); ok {
					c.SystemNodes.InstanceType = s
				}
			case "count":
				if i, ok := r.scalarInt(val, KeySystemNodes+".count"); ok {
					c.SystemNodes.Count = i
				}
			}
		})
	}

	existing := nodes[KeyVPCID] != nil
	if existing {
		v = VPCSettings{FlowLogs: v.FlowLogs}
		v.FlowLogs.Enabled = false // the VPC's owner sets its flow logs, unless the stack asks
		v.VPCID, _ = r.scalarString(nodes[KeyVPCID], KeyVPCID)
		for _, key := range []string{KeyVPCCIDR, KeyAvailabilityZones} {
			if nodes[key] != nil {
				r.fail(lines[key], key, "remove it: an existing VPC's zones are the keys of "+KeyPrivateSubnets,
					"%s only applies to a VPC gpucluster creates, and %s is set", key, KeyVPCID)
			}
		}
		if n := nodes[KeyPrivateSubnets]; n != nil {
			v.PrivateSubnets, _ = r.stringMap(n, KeyPrivateSubnets, KeyPrivateSubnets, lines)
		}
		if n := nodes[KeyPublicSubnets]; n != nil {
			v.PublicSubnets, _ = r.stringMap(n, KeyPublicSubnets, KeyPublicSubnets, lines)
		}
		v.AvailabilityZones = sortedKeys(v.PrivateSubnets)
		v.FlowLogs = r.flowLogs(nodes[KeyFlowLogs], v.FlowLogs, lines)
		return c, v
	}
	for _, key := range []string{KeyPrivateSubnets, KeyPublicSubnets} {
		if nodes[key] != nil {
			r.fail(lines[key], key, "set "+KeyVPCID+" to use existing subnets, or remove "+key,
				"%s names subnets of an existing VPC, but no %s is set", key, KeyVPCID)
		}
	}
	if n := nodes[KeyVPCCIDR]; n != nil {
		v.CIDR, _ = r.scalarString(n, KeyVPCCIDR)
	}
	v.FlowLogs = r.flowLogs(nodes[KeyFlowLogs], v.FlowLogs, lines)
	if n := nodes[KeyAvailabilityZones]; n != nil {
		if l, ok := r.stringList(n, KeyAvailabilityZones, KeyAvailabilityZones, lines); ok {
			v.AvailabilityZones = l
		}
	}
	return c, v
}

// flowLogs reads gpucluster:flowLogs over its defaults: {enabled, trafficType, retentionDays}.
func (r *reader) flowLogs(n *yaml.Node, f FlowLogSettings, lines map[string]int) FlowLogSettings {
	if n == nil || !r.expectKind(n, yaml.MappingNode, KeyFlowLogs, "a mapping {enabled: true, trafficType: ALL, retentionDays: 90}") {
		return f
	}
	r.eachKey(n, KeyFlowLogs+".", []string{"enabled", "trafficType", "retentionDays"}, func(k string, kn, val *yaml.Node) {
		lines[KeyFlowLogs+"."+k] = kn.Line
		switch k {
		case "enabled":
			if b, ok := r.scalarBool(val, KeyFlowLogs+".enabled"); ok {
				f.Enabled = b
			}
		case "trafficType":
			if s, ok := r.scalarString(val, KeyFlowLogs+".trafficType"); ok {
				f.TrafficType = s
			}
		case "retentionDays":
			if i, ok := r.scalarInt(val, KeyFlowLogs+".retentionDays"); ok {
				f.RetentionDays = i
			}
		}
	})
	return f
}

func (r *reader) scalarBool(v *yaml.Node, key string) (bool, bool) {
	if !r.expectKind(v, yaml.ScalarNode, key, "true or false") {
		return false, false
	}
	var b bool
	if v.Tag != "!!bool" || v.Decode(&b) != nil {
		r.fail(v.Line, key, "write true or false", "%q is not true or false", v.Value)
		return false, false
	}
	return b, true
}

// benchmarks reads gpucluster:benchmarks: {enabled, trainingCommand}.
func (r *reader) benchmarks(n *yaml.Node, lines map[string]int) BenchmarkSettings {
	var b BenchmarkSettings
	if !r.expectKind(n, yaml.MappingNode, KeyBenchmarks, "a mapping {enabled: true, trainingCommand: [train.py, --epochs, \"1\"]}") {
		return b
	}
	r.eachKey(n, KeyBenchmarks+".", []string{"enabled", "trainingCommand"}, func(k string, kn, val *yaml.Node) {
		key := KeyBenchmarks + "." + k
		lines[key] = kn.Line
		switch k {
		case "enabled":
			b.Enabled, _ = r.scalarBool(val, key)
		case "trainingCommand":
			l, ok := r.stringList(val, key, key, lines)
			if !ok {
				return
			}
			if len(l) == 0 {
				r.fail(kn.Line, key, "list the script and its arguments, such as [train.py, --deepspeed, ds_z3.json], or remove the key",
					"an empty training command runs nothing")
			}
			for i, arg := range l {
				if strings.HasPrefix(arg, "--nnodes") || strings.HasPrefix(arg, "--nproc") || strings.HasPrefix(arg, "--rdzv") || arg == "torchrun" {
					r.fail(lines[fmt.Sprintf("%s[%d]", key, i)], fmt.Sprintf("%s[%d]", key, i),
						"remove it: gpucluster derives torchrun's nodes, processes per node and rendezvous from the pool",
						"%q is torchrun's own; the command lists only the script torchrun runs and its arguments", arg)
				}
			}
			b.TrainingCommand = l
		}
	})
	if len(b.TrainingCommand) > 0 && !b.Enabled {
		r.fail(lines[KeyBenchmarks+".trainingCommand"], KeyBenchmarks+".enabled", "add enabled: true, or remove trainingCommand",
			"a training command is set but benchmarks are not enabled: no job would run it")
	}
	return b
}

// efaFailFast reads gpucluster:efaFailFast: {enabled, reason}; off only with a reason.
func (r *reader) efaFailFast(n *yaml.Node, lines map[string]int) EFAFailFastSettings {
	s := EFAFailFastSettings{Enabled: true}
	if !r.expectKind(n, yaml.MappingNode, KeyEFAFailFast, `a mapping {enabled: false, reason: "why jobs may fall back to TCP"}`) {
		return s
	}
	r.eachKey(n, KeyEFAFailFast+".", []string{"enabled", "reason"}, func(k string, kn, val *yaml.Node) {
		key := KeyEFAFailFast + "." + k
		lines[key] = kn.Line
		switch k {
		case "enabled":
			if b, ok := r.scalarBool(val, key); ok {
				s.Enabled = b
			}
		case "reason":
			if v, ok := r.scalarString(val, key); ok {
				s.Reason = strings.TrimSpace(v)
			}
		}
	})
	if !s.Enabled && s.Reason == "" {
		r.fail(lines[KeyEFAFailFast+".enabled"], KeyEFAFailFast+".reason", "add reason: saying why this stack's jobs may run over TCP sockets when aws-ofi-nccl cannot start (the review shows it)",
			"%s is turned off without a reason", KeyEFAFailFast)
	}
	return s
}

// observability reads gpucluster:observability: one of ObservabilityModes. A benchmark stack
// that chooses metrics is warned that they run during its measurements.
func (r *reader) observability(n *yaml.Node, benchmarks bool) string {
	v, ok := r.scalarString(n, KeyObservability)
	if !ok {
		return ""
	}
	if problem, fix := observabilityProblem(v); problem != "" {
		r.fail(n.Line, KeyObservability, fix, "%s", problem)
		return ""
	}
	if benchmarks && v != ObservabilityOff {
		r.warn(n.Line, KeyObservability, "keep it for watching the cluster; for a measurement, compare with a run without it",
			"%s", ObservabilityDuringBenchmarks(v))
	}
	return v
}
