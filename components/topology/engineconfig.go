package topology

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EngineConfig is the configuration the Pulumi engine passes a program under `pulumi up`: the
// stack file merged with its ESC environments (environment: imports), decrypted secrets and any
// other source. Values are strings, objects and lists as JSON, as Pulumi passes them.
type EngineConfig struct {
	Values  map[string]string
	Secrets []string // keys whose values are secret
}

// Where a config value came from, when not plainly from the stack file.
const (
	originSecret   = "secret"
	originEngine   = "engine"
	originOverride = "override"
)

// ParseEngineConfig builds a stack from the engine's configuration. The stack file (data, which
// may be empty) serves only to place errors: a value equal to the file's keeps the file's line; a
// value the file does not hold is named with its key and where it came from. Secret values are
// never written into an error.
func ParseEngineConfig(file string, data []byte, ec EngineConfig) (Stack, error) {
	var fileConfig *yaml.Node
	var envs []string
	if len(data) > 0 {
		fr := &reader{file: file}
		if root, ok := fr.document(data); ok && root.Kind == yaml.MappingNode {
			fileConfig = MappingValue(root, "config")
			envs = environments(root)
		}
	}
	r := &reader{file: file, origins: map[string]string{}, secretValues: map[string]bool{}, environments: envs}
	config := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, key := range slices.Sorted(mapKeys(ec.Values)) {
		value := engineValueNode(ec.Values[key])
		keyNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
		var fileValue *yaml.Node
		if fileConfig != nil {
			for i := 0; i+1 < len(fileConfig.Content); i += 2 {
				if fileConfig.Content[i].Value == key {
					keyNode.Line = fileConfig.Content[i].Line
					fileValue = fileConfig.Content[i+1]
				}
			}
		}
		same := overlayLines(value, fileValue)
		switch {
		case slices.Contains(ec.Secrets, key):
			r.origins[key] = originSecret
			collectScalars(value, r.secretValues)
		case fileValue == nil:
			r.origins[key] = originEngine
		case !same:
			r.origins[key] = originOverride
		}
		config.Content = append(config.Content, keyNode, value)
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "config", Line: lineOf(fileConfig)}, config}}
	r.dropDuplicates(root, "")
	st, err := r.stack(root)
	st.Environments = envs
	// Secrets lists the keys gpucluster reads (a secret provider credential says nothing about
	// gpucluster's outputs); every secret value, credentials included, is kept out of messages.
	st.Secrets = slices.Sorted(func(yield func(string) bool) {
		for k, o := range r.origins {
			if o == originSecret && (k == KeyRegion || contains(gpuclusterKeys, k)) && !yield(k) {
				return
			}
		}
	})
	return st, err
}

// engineValueNode reads one engine value: JSON objects and lists as structure, anything else as
// the scalar YAML would make of it (so "4" is a number and "true" a boolean, as in the file).
func engineValueNode(v string) *yaml.Node {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var doc yaml.Node
		if json.Valid([]byte(t)) && yaml.Unmarshal([]byte(t), &doc) == nil && len(doc.Content) == 1 {
			return doc.Content[0]
		}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	var doc yaml.Node
	if yaml.Unmarshal([]byte(v), &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Value == v {
		n.Tag = doc.Content[0].Tag
	}
	return n
}

// overlayLines gives each node of the engine's value the line of the same value in the file, and
// line 0 (not in the file) elsewhere. It reports whether the whole value equals the file's.
func overlayLines(n, file *yaml.Node) bool {
	if file != nil && file.Kind == yaml.AliasNode && file.Alias != nil {
		file = file.Alias
	}
	switch {
	case file == nil || file.Kind != n.Kind:
		if file != nil && isSecure(file) {
			setLines(n, file.Line) // the secret's own line: its value is the decrypted one
		} else {
			setLines(n, 0)
		}
		return false
	case n.Kind == yaml.ScalarNode:
		if n.Value == file.Value {
			n.Line = file.Line
			return true
		}
		n.Line = 0
		return false
	}
	n.Line = file.Line
	same := len(n.Content) == len(file.Content)
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			fv := MappingValue(file, k.Value)
			k.Line = 0
			if fv != nil {
				k.Line = keyLine(file, k.Value)
			}
			same = overlayLines(v, fv) && same
		}
		return same
	}
	for i, c := range n.Content {
		var fc *yaml.Node
		if i < len(file.Content) {
			fc = file.Content[i]
		}
		same = overlayLines(c, fc) && same
	}
	return same
}

func setLines(n *yaml.Node, line int) {
	n.Line = line
	for _, c := range n.Content {
		setLines(c, line)
	}
}

// isSecure: Pulumi writes an encrypted value as a mapping {secure: <ciphertext>}.
func isSecure(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "secure"
}

func collectScalars(n *yaml.Node, into map[string]bool) {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		into[n.Value] = true
	}
	for _, c := range n.Content {
		collectScalars(c, into)
	}
}

// MappingValue is the value of key in a YAML mapping node, or nil: how a stack file's keys are
// found by anything that reads or edits one node by node.
func MappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func keyLine(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 0
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// environments lists the ESC environments a stack file imports: `environment: [a, b]` or
// `environment: {imports: [a, b]}`.
func environments(root *yaml.Node) []string {
	n := MappingValue(root, "environment")
	if n != nil && n.Kind == yaml.MappingNode {
		n = MappingValue(n, "imports")
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, c := range n.Content {
		if c.Kind == yaml.ScalarNode {
			out = append(out, c.Value)
		} else if c.Kind == yaml.MappingNode && len(c.Content) >= 2 {
			out = append(out, c.Content[0].Value) // {env-name: {merge: false}}
		}
	}
	return out
}

// originNote is what an error adds about where its value came from.
func (r *reader) originNote(key string) string {
	if r.origins == nil {
		return ""
	}
	top := key
	if i := strings.IndexAny(key, "[."); i > 0 {
		top = key[:i]
	}
	where := "from outside the file (pulumi config --path, PULUMI_CONFIG or another engine source)"
	if len(r.environments) > 0 {
		where = fmt.Sprintf("from the ESC environment(s) the stack imports (%s) or another engine source", strings.Join(r.environments, ", "))
	}
	switch r.origins[top] {
	case originSecret:
		return fmt.Sprintf(" (%s is a secret: Pulumi decrypted it; its value is not shown)", top)
	case originEngine:
		return fmt.Sprintf(" (%s is not in %s: its value comes %s)", top, r.file, where)
	case originOverride:
		return fmt.Sprintf(" (the value Pulumi passed for %s differs from %s: it comes %s)", top, r.file, where)
	}
	return ""
}

// redact removes secret values from a message: quoted, and as whole words (a short secret such
// as "2" must not survive as a count in a message, nor replace the 2 inside "p5.48xlarge").
func (r *reader) redact(s string) string {
	for _, v := range slices.Sorted(mapKeys(r.secretValues)) {
		s = strings.ReplaceAll(s, fmt.Sprintf("%q", v), "[secret]")
		word := regexp.MustCompile(`(^|[^A-Za-z0-9._-])` + regexp.QuoteMeta(v) + `($|[^A-Za-z0-9._-])`)
		s = word.ReplaceAllString(s, "${1}[secret]${2}")
	}
	return s
}
