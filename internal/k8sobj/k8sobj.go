// Package k8sobj reads Kubernetes objects held as plain JSON values (maps and lists), as the
// plan renders them and the tests create them.
package k8sobj

import "sort"

// PodSpecs are the pod specs an object holds, at any depth: a DaemonSet's or a Job's template, an
// MPIJob's replica templates. A pod spec is the map that holds "containers". They come in the
// order of the object's keys, so that readers list them the same way every time.
func PodSpecs(v any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["containers"]; ok {
			return []map[string]any{x}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, PodSpecs(x[k])...)
		}
	case []any:
		for _, e := range x {
			out = append(out, PodSpecs(e)...)
		}
	}
	return out
}
