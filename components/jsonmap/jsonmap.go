// Package jsonmap turns a typed value into the plain JSON-shaped map pulumi inputs and outputs
// take (a typed struct cannot be an untyped Kubernetes field or a component's recorded input).
package jsonmap

import "encoding/json"

// Of is v's JSON encoding decoded as a map.
func Of(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
