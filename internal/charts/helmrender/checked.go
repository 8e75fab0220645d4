package helmrender

import (
	"encoding/base64"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
)

// asChecked is an object as the kubernetes provider applies it: its Check normalizes a chart's
// object before anything is sent to the cluster, and the state records that form. The steps are
// provider/v4's at f47bc2d6f199: pkg/provider/provider.go normalizeInputs, pkg/clients/
// unstructured.go Normalize, and pkg/provider/util.go pruneMap and pruneSlice. A built-in kind
// goes through its typed form (client-go's scheme) and back, keeping only the fields the chart
// gave: `cpu: 2` becomes "2", a Quantity. A CRD loses a false preserveUnknownFields and its
// status; a Secret's stringData moves into data, base64-encoded. Read-only metadata goes.
func asChecked(obj map[string]any) map[string]any {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		if preserve, found, err := unstructured.NestedBool(obj, "spec", "preserveUnknownFields"); err == nil && found && !preserve {
			unstructured.RemoveNestedField(obj, "spec", "preserveUnknownFields")
		}
		unstructured.RemoveNestedField(obj, "status")
	case gvk.Group == "" && gvk.Kind == "Secret":
		checkedSecret(u)
	default:
		if typed, err := kscheme.Scheme.New(gvk); err == nil {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err == nil {
				if back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed); err == nil {
					obj = pruneMap(back, obj)
				}
			}
		}
	}
	for _, f := range []string{"creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "generation", "managedFields", "resourceVersion", "uid"} {
		unstructured.RemoveNestedField(obj, "metadata", f)
	}
	return obj
}

// checkedSecret: stringData is written into data, base64-encoded, and dropped; data's values are
// decoded and encoded again (the API server's form), as normalizeSecret does.
func checkedSecret(u *unstructured.Unstructured) {
	stringData, found, err := unstructured.NestedStringMap(u.Object, "stringData")
	data, _, _ := unstructured.NestedMap(u.Object, "data")
	if err == nil && found && len(stringData) > 0 {
		if data == nil {
			data = map[string]any{}
		}
		for k, v := range stringData {
			data[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		_ = unstructured.SetNestedMap(u.Object, data, "data")
		unstructured.RemoveNestedField(u.Object, "stringData")
		return
	}
	if len(data) == 0 {
		return
	}
	for k, v := range data {
		if s, ok := v.(string); ok {
			if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
				data[k] = base64.StdEncoding.EncodeToString(raw)
			}
		}
	}
	_ = unstructured.SetNestedMap(u.Object, data, "data")
}

// pruneMap keeps the keys of source (the typed round trip) that target (the chart's object) has,
// recursively; where the two differ in type, source's value.
func pruneMap(source, target map[string]any) map[string]any {
	if target == nil || source == nil {
		return nil
	}
	result := map[string]any{}
	for key, value := range source {
		targetValue, ok := target[key]
		if !ok {
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			if t, same := targetValue.(map[string]any); same {
				result[key] = pruneMap(v, t)
				continue
			}
		case []any:
			if t, same := targetValue.([]any); same {
				result[key] = pruneSlice(v, t)
				continue
			}
		}
		result[key] = value
	}
	return result
}

// pruneSlice keeps the elements of source that target has by position, pruned alike; slices whose
// first elements differ in type are source's, whole.
func pruneSlice(source, target []any) []any {
	if target == nil || source == nil {
		return nil
	}
	result := make([]any, 0, len(target))
	if len(source) == 0 || len(target) == 0 {
		return result
	}
	if reflect.TypeOf(source[0]) != reflect.TypeOf(target[0]) {
		return source
	}
	for i, targetValue := range target {
		if i >= len(source) {
			break
		}
		value := source[i]
		if value == nil || targetValue == nil {
			result = append(result, value)
			continue
		}
		switch v := value.(type) {
		case map[string]any:
			if t, ok := targetValue.(map[string]any); ok {
				if pruned := pruneMap(v, t); pruned != nil {
					result = append(result, pruned)
				}
				continue
			}
		case []any:
			if t, ok := targetValue.([]any); ok {
				if pruned := pruneSlice(v, t); pruned != nil {
					result = append(result, pruned)
				}
				continue
			}
		}
		result = append(result, value)
	}
	return result
}
