package offline

import (
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Markers for values a plan cannot show.
const (
	Unknown = "<unknown until deploy>"
	Secret  = "<secret>"
)

// Plain converts a property value to plain JSON values, with Unknown for values only the cloud
// will know, Secret for secrets, and the URN for resource references. Maps come out with their
// keys in order when marshalled (encoding/json sorts map keys), so the result is deterministic.
func Plain(v resource.PropertyValue) any {
	switch {
	case v.IsComputed():
		return Unknown
	case v.IsOutput():
		o := v.OutputValue()
		if !o.Known {
			return Unknown
		}
		if o.Secret {
			return Secret
		}
		return Plain(o.Element)
	case v.IsSecret():
		return Secret
	case v.IsResourceReference():
		return string(v.ResourceReferenceValue().URN)
	case v.IsObject():
		return PlainMap(v.ObjectValue())
	case v.IsArray():
		arr := v.ArrayValue()
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = Plain(e)
		}
		return out
	case v.IsAsset(), v.IsArchive():
		return "<asset>"
	}
	return v.V
}

// PlainMap converts a property map (see Plain).
func PlainMap(m resource.PropertyMap) map[string]any {
	out := make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[k] = Plain(m[resource.PropertyKey(k)])
	}
	return out
}
