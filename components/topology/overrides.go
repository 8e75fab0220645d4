package topology

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// setter applies one pool key's YAML value to a profile. key is the full key for errors; lines
// receives the line of every nested key it reads (for placing validation problems).
type setter func(r *reader, v *yaml.Node, key string, p *Profile, lines map[string]int)

func str(set func(*Profile, string)) setter {
	return func(r *reader, v *yaml.Node, key string, p *Profile, _ map[string]int) {
		if s, ok := r.scalarString(v, key); ok {
			set(p, s)
		}
	}
}

func integer(set func(*Profile, int)) setter {
	return func(r *reader, v *yaml.Node, key string, p *Profile, _ map[string]int) {
		if n, ok := r.scalarInt(v, key); ok {
			set(p, n)
		}
	}
}

// count reads a count whose 0 would mean "the default" inside the profile: written in a stack
// file, 0 or less is refused rather than silently replaced by the default.
func count(def string, set func(*Profile, int)) setter {
	return func(r *reader, v *yaml.Node, key string, p *Profile, _ map[string]int) {
		n, ok := r.scalarInt(v, key)
		switch {
		case !ok:
		case n < 1:
			r.fail(v.Line, key, "remove the key for the default ("+def+"), or set 1 or more",
				"%d is not a count: gpucluster would replace it with the default", n)
		default:
			set(p, n)
		}
	}
}

// poolSetters are the keys a pool may override, one per Profile field. `name` and `profile` are
// read before the overrides are applied.
var poolSetters = map[string]setter{
	"instanceType":          str(func(p *Profile, s string) { p.InstanceType = s }),
	"nodes":                 integer(func(p *Profile, n int) { p.MinNodes, p.MaxNodes = n, n }),
	"minNodes":              integer(func(p *Profile, n int) { p.MinNodes = n }),
	"maxNodes":              integer(func(p *Profile, n int) { p.MaxNodes = n }),
	"placement":             str(func(p *Profile, s string) { p.Placement = Placement(s) }),
	"partitions":            integer(func(p *Profile, n int) { p.Partitions = n }),
	"fabric":                str(func(p *Profile, s string) { p.Fabric = Fabric(s) }),
	"efaInterfaces":         count("one per network card", func(p *Profile, n int) { p.EFAInterfaces = n }),
	"podLayout":             str(func(p *Profile, s string) { p.PodLayout = PodLayout(s) }),
	"podsPerNode":           count("one pod per GPU with pod-per-gpu", func(p *Profile, n int) { p.PodsPerNode = n }),
	"capacity":              str(func(p *Profile, s string) { p.Capacity = CapacityType(s) }),
	"capacityReservationId": str(func(p *Profile, s string) { p.CapacityReservationID = s }),
	"placementGroupName":    str(func(p *Profile, s string) { p.PlacementGroupName = s }),
	"provisioner":           str(func(p *Profile, s string) { p.Provisioner = Provisioner(s) }),
	"amiFamily":             str(func(p *Profile, s string) { p.AMIFamily = AMIFamily(s) }),
	"amiId":                 str(func(p *Profile, s string) { p.AMIID = s }),
	"fabricManager":         str(func(p *Profile, s string) { p.FabricManager = FabricManagerMode(s) }),
	"shmSize":               str(func(p *Profile, s string) { p.ShmSize = s }),
	"stopped": func(r *reader, v *yaml.Node, key string, p *Profile, _ map[string]int) {
		if b, ok := r.scalarBool(v, key); ok {
			p.Stopped = b
		}
	},
	"nodeRepair": func(r *reader, v *yaml.Node, key string, p *Profile, _ map[string]int) {
		if b, ok := r.scalarBool(v, key); ok {
			p.NodeRepair = &b
		}
	},
	"availabilityZones": func(r *reader, v *yaml.Node, key string, p *Profile, lines map[string]int) {
		if zs, ok := r.stringList(v, key, "availabilityZones", lines); ok {
			p.AvailabilityZones = zs
		}
	},
	"ncclEnv": func(r *reader, v *yaml.Node, key string, p *Profile, lines map[string]int) {
		if v.Kind == yaml.MappingNode {
			for i := 1; i < len(v.Content); i += 2 {
				if val := v.Content[i]; val.Tag == "!!bool" {
					// YAML makes `false` a boolean; the variable would be set to the string "false",
					// which NCCL's integer parameters do not read.
					r.fail(val.Line, key+"."+keyText(v.Content[i-1]), "write 0 or 1 (quoted or not): NCCL reads numbers",
						"%s is a YAML boolean; NCCL does not read true/false", val.Value)
					val.Tag = "!!str"
				}
			}
		}
		if m, ok := r.stringMap(v, key, "ncclEnv", lines); ok {
			p.NCCLEnv = mergeMaps(p.NCCLEnv, m)
		}
	},
	"labels": func(r *reader, v *yaml.Node, key string, p *Profile, lines map[string]int) {
		if m, ok := r.stringMap(v, key, "labels", lines); ok {
			p.Labels = mergeMaps(p.Labels, m)
		}
	},
	"taints": func(r *reader, v *yaml.Node, key string, p *Profile, lines map[string]int) {
		items := r.objectList(v, key, "taints", []string{"key", "value", "effect"}, lines)
		p.Taints = nil
		for _, f := range items {
			p.Taints = append(p.Taints, Taint{Key: f["key"], Value: f["value"], Effect: f["effect"]})
		}
	},
	"tolerations": func(r *reader, v *yaml.Node, key string, p *Profile, lines map[string]int) {
		items := r.objectList(v, key, "tolerations", []string{"key", "operator", "value", "effect"}, lines)
		p.Tolerations = nil
		for _, f := range items {
			op := f["operator"]
			if op == "" {
				op = "Equal" // Kubernetes' default operator
			}
			p.Tolerations = append(p.Tolerations, Toleration{Key: f["key"], Operator: op, Value: f["value"], Effect: f["effect"]})
		}
	},
}

// PoolKeys lists every key a pool mapping accepts, sorted.
func PoolKeys() []string {
	keys := []string{"name", "profile"}
	for k := range poolSetters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// overrides applies the pool's keys on top of its profile and returns which keys it set.
// Maps (labels, ncclEnv) merge with the profile's; lists (taints, tolerations, zones) replace.
func (r *reader) overrides(n *yaml.Node, key string, p *Profile, lines map[string]int) map[string]bool {
	explicit := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := n.Content[i], n.Content[i+1]
		k, full := kn.Value, key+"."+keyText(kn)
		set, known := poolSetters[k]
		switch {
		case k == "name" || k == "profile":
		case !known:
			r.unknownKey(kn.Line, full, k, PoolKeys())
			continue
		default:
			lines[k] = kn.Line
			set(r, v, full, p, lines)
		}
		explicit[k] = true
	}
	if explicit["nodes"] && (explicit["minNodes"] || explicit["maxNodes"]) {
		r.fail(lines["nodes"], key+".nodes", "use nodes: N for a fixed size, or minNodes and maxNodes for a range, not both",
			"nodes and minNodes/maxNodes are both set")
	}
	return explicit
}

func (r *reader) scalarString(v *yaml.Node, key string) (string, bool) {
	if !r.expectKind(v, yaml.ScalarNode, key, "a single value") {
		return "", false
	}
	return v.Value, true
}

func (r *reader) scalarInt(v *yaml.Node, key string) (int, bool) {
	if !r.expectKind(v, yaml.ScalarNode, key, "a whole number") {
		return 0, false
	}
	var n int
	if v.Tag != "!!int" || v.Decode(&n) != nil {
		r.fail(v.Line, key, "write a whole number such as 4", "%q is not a whole number", v.Value)
		return 0, false
	}
	return n, true
}

func (r *reader) stringList(v *yaml.Node, key, rel string, lines map[string]int) ([]string, bool) {
	if !r.expectKind(v, yaml.SequenceNode, key, "a list such as [us-east-1a]") {
		return nil, false
	}
	out := []string{}
	for i, item := range v.Content {
		idx := fmt.Sprintf("[%d]", i)
		lines[rel+idx] = item.Line
		if s, ok := r.scalarString(item, key+idx); ok {
			out = append(out, s)
		}
	}
	return out, true
}

func (r *reader) stringMap(v *yaml.Node, key, rel string, lines map[string]int) (map[string]string, bool) {
	if !r.expectKind(v, yaml.MappingNode, key, "a mapping of names to values") {
		return nil, false
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		kn, val := v.Content[i], v.Content[i+1]
		lines[rel+"."+kn.Value] = kn.Line
		if s, ok := r.scalarString(val, key+"."+keyText(kn)); ok {
			out[kn.Value] = s
		}
	}
	return out, true
}

// objectList reads a list of flat mappings with the given fields (taints, tolerations).
func (r *reader) objectList(v *yaml.Node, key, rel string, fields []string, lines map[string]int) []map[string]string {
	if !r.expectKind(v, yaml.SequenceNode, key, "a list of mappings") {
		return nil
	}
	var out []map[string]string
	for i, item := range v.Content {
		idx := fmt.Sprintf("[%d]", i)
		lines[rel+idx] = item.Line
		if !r.expectKind(item, yaml.MappingNode, key+idx, "a mapping with "+strings.Join(fields, ", ")) {
			continue
		}
		obj := map[string]string{}
		r.eachKey(item, key+idx+".", fields, func(k string, kn, val *yaml.Node) {
			lines[rel+idx+"."+k] = kn.Line
			if s, ok := r.scalarString(val, key+idx+"."+k); ok {
				obj[k] = s
			}
		})
		out = append(out, obj)
	}
	return out
}

func mergeMaps(base, over map[string]string) map[string]string {
	out := cloneMap(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
