package schema

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Failure is one input the provider refuses: the property's Pulumi path (vpcConfig.subnetIds,
// taints[0].key) and the reason, worded as pulumi-terraform-bridge words it.
type Failure struct {
	Path   string
	Reason string
}

// reservedKeys are the bridge's own keys, never a resource's input (pulumi-terraform-bridge
// pkg/reservedkeys), and Terraform's timeouts block, which every SDKv2 resource accepts
// (terraform-plugin-sdk helper/schema validateObject).
var reservedKeys = []string{"__defaults", "__meta", "__pulumi_raw_state_delta", "timeouts"}

// Check validates a resource's inputs against its type as the bridge does at Check, before
// anything is created:
//   - a key the type does not have: "Invalid or unknown key" (terraform-plugin-sdk
//     helper/schema validateObject, adapted by the bridge's adapt_check_failures.go);
//   - a required input that is absent: "Missing required argument. The argument "role_arn" is
//     required, but no definition was found." (validateRequired);
//   - a value of another shape than the type's (an object for a string, a scalar for a list);
//
// each then given as "<reason>. Examine values at '<resource name>.<path>'." (the bridge's
// check_failures.go). Unknown values, secrets' and outputs' elements, resource references and
// assets are looked into or passed as the bridge's type checker does.
func Check(t *ObjectType, resourceName string, inputs resource.PropertyMap) []Failure {
	var fs []Failure
	checkObject(t, "", inputs, &fs)
	for i := range fs {
		fs[i].Reason = fmt.Sprintf("%s. Examine values at '%s.%s'.", fs[i].Reason, resourceName, fs[i].Path)
	}
	return fs
}

func checkObject(t *ObjectType, path string, props resource.PropertyMap, fs *[]Failure) {
	for _, key := range slices.Sorted(maps.Keys(props)) {
		k := string(key)
		if slices.Contains(reservedKeys, k) {
			continue
		}
		p, ok := t.Properties[k]
		if !ok {
			*fs = append(*fs, Failure{Path: join(path, k), Reason: "Invalid or unknown key"})
			continue
		}
		checkValue(p.Type, join(path, k), props[key], fs)
	}
	for _, name := range slices.Sorted(maps.Keys(t.Properties)) {
		p := t.Properties[name]
		if !p.Required {
			continue
		}
		if v, set := props[resource.PropertyKey(name)]; set && !v.IsNull() {
			continue
		}
		*fs = append(*fs, Failure{Path: join(path, name),
			Reason: fmt.Sprintf("Missing required argument. The argument %q is required, but no definition was found.", terraformKey(path, name))})
	}
}

func checkValue(t *Type, path string, v resource.PropertyValue, fs *[]Failure) {
	switch {
	case v.IsNull() || v.IsComputed() || v.IsResourceReference() || v.IsAsset() || v.IsArchive():
		return
	case v.IsSecret():
		checkValue(t, path, v.SecretValue().Element, fs)
		return
	case v.IsOutput():
		if o := v.OutputValue(); o.Known {
			checkValue(t, path, o.Element, fs)
		}
		return
	}
	wrong := func() {
		*fs = append(*fs, Failure{Path: path, Reason: fmt.Sprintf("Inappropriate value: a %s is required, not %s", t.Kind, shape(v))})
	}
	switch t.Kind {
	case String, Integer, Number, Bool:
		// The bridge turns any scalar into the attribute's type ("2" for 2, "true" for true).
		if v.IsArray() || v.IsObject() {
			wrong()
		}
	case Array:
		if !v.IsArray() {
			wrong()
			return
		}
		for i, e := range v.ArrayValue() {
			checkValue(t.Elem, fmt.Sprintf("%s[%d]", path, i), e, fs)
		}
	case Map:
		if !v.IsObject() {
			wrong()
			return
		}
		for k, e := range v.ObjectValue() {
			checkValue(t.Elem, join(path, string(k)), e, fs)
		}
	case Object:
		if !v.IsObject() {
			wrong()
			return
		}
		checkObject(t.Object, path, v.ObjectValue(), fs)
	}
}

func shape(v resource.PropertyValue) string {
	switch {
	case v.IsArray():
		return "a list"
	case v.IsObject():
		return "an object"
	case v.IsString():
		return "a string"
	case v.IsNumber():
		return "a number"
	case v.IsBool():
		return "a boolean"
	}
	return v.TypeString()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// terraformKey is the Terraform attribute path the bridge's message names ("role_arn",
// "vpc_config.0.subnet_ids"): the Pulumi path in snake case, with a nested block's index 0. A
// name the bridge renamed (a plural it made) stays as Pulumi spells it: the Go SDK does not
// keep Terraform's name.
func terraformKey(path, name string) string {
	var parts []string
	if path != "" {
		for _, p := range strings.Split(path, ".") {
			base, index, indexed := strings.Cut(p, "[")
			if indexed {
				parts = append(parts, snake(base), strings.TrimSuffix(index, "]"))
			} else {
				parts = append(parts, snake(base), "0")
			}
		}
	}
	return strings.Join(append(parts, snake(name)), ".")
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// UnknownKeys lists the paths of the keys in a record's plain inputs (JSON values) that the type
// does not have, looking into nested objects and lists of objects. A secret recorded as
// {"secret": value} is looked into as its value.
func UnknownKeys(t *ObjectType, inputs map[string]any) []string {
	var out []string
	unknownKeys(t, "", inputs, &out)
	slices.Sort(out)
	return out
}

func unknownKeys(t *ObjectType, path string, inputs map[string]any, out *[]string) {
	for k, v := range inputs {
		if slices.Contains(reservedKeys, k) {
			continue
		}
		p, ok := t.Properties[k]
		if !ok {
			*out = append(*out, join(path, k))
			continue
		}
		unknownKeysIn(p.Type, join(path, k), v, out)
	}
}

func unknownKeysIn(t *Type, path string, v any, out *[]string) {
	if s, ok := v.(map[string]any); ok && len(s) == 1 && s["secret"] != nil {
		v = s["secret"]
	}
	switch {
	case t.Kind == Object:
		if m, ok := v.(map[string]any); ok {
			unknownKeys(t.Object, path, m, out)
		}
	case t.Kind == Array && t.Elem.Kind == Object:
		if l, ok := v.([]any); ok {
			for i, e := range l {
				unknownKeysIn(t.Elem, fmt.Sprintf("%s[%d]", path, i), e, out)
			}
		}
	}
}
