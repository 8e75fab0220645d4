package topology

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxStackFileBytes caps a stack file. Real ones are a few KiB; a file this large is not a stack
// file (a log or an image saved under the wrong name), and reading it whole costs memory.
const MaxStackFileBytes = 1 << 20

// document reads a stack file's YAML into a node tree ready for the parser: size, encoding and
// syntax checked with a line, merge keys (<<: *anchor) resolved as Pulumi's YAML reader resolves
// them, and every duplicate key reported and dropped. ok is false when nothing can be read.
func (r *reader) document(data []byte) (*yaml.Node, bool) {
	if len(data) > MaxStackFileBytes {
		r.fail(0, "(file)", fmt.Sprintf("keep the stack file under %d KiB: it holds config, not data", MaxStackFileBytes>>10),
			"the file is %d bytes, over the %d-byte limit", len(data), MaxStackFileBytes)
		return nil, false
	}
	if i := invalidUTF8(data); i >= 0 {
		r.fail(lineAt(data, i), "(file)", "save the file as UTF-8 (Pulumi reads stack files as UTF-8)",
			"byte %d (0x%02x) is not UTF-8", i, data[i])
		return nil, false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := yamlLinePrefix.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), "")
		r.fail(syntaxErrorLine(data, err), "(syntax)", "fix the YAML syntax at that line", "%s", msg)
		return nil, false
	}
	if len(doc.Content) == 0 {
		r.fail(0, "(file)", "add a config: block with "+KeyPools, "the file is empty")
		return nil, false
	}
	root := doc.Content[0]
	r.resolveMerges(root, map[*yaml.Node]bool{})
	r.dropDuplicates(root, "")
	return root, true
}

var yamlLinePrefix = regexp.MustCompile(`^line \d+: `)

// maxLinesToLocate bounds the line search below: a stack file is a few dozen lines, and the
// search parses one prefix per line.
const maxLinesToLocate = 2000

// syntaxErrorLine is the line where the YAML stops parsing: the first line whose prefix of the
// file fails. yaml.v3's own line is off by one for parser errors (it reports the 0-based line
// of the enclosing construct), points at the construct rather than the culprit ("did not find
// expected '-' indicator"), or is missing ("unknown anchor"), so it is only the fallback.
func syntaxErrorLine(data []byte, err error) int {
	if bytes.Count(data, []byte("\n")) <= maxLinesToLocate {
		var n yaml.Node
		for end, line := 0, 1; end < len(data); line++ {
			next := bytes.IndexByte(data[end:], '\n')
			if next < 0 {
				end = len(data)
			} else {
				end += next + 1
			}
			if yaml.Unmarshal(data[:end], &n) != nil {
				return line
			}
		}
	}
	if line := yamlErrorLine(err); line > 0 {
		return line
	}
	return firstControlLine(data)
}

func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		c, size := utf8.DecodeRune(data[i:])
		if c == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

func lineAt(data []byte, offset int) int { return bytes.Count(data[:offset], []byte("\n")) + 1 }

// firstControlLine finds the line of the first character YAML forbids, for the parser errors
// that name none ("control characters are not allowed").
func firstControlLine(data []byte) int {
	for i, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return lineAt(data, i)
		}
	}
	return 0
}

// resolveMerges expands YAML merge keys in place: the mapping's own keys win, then each merged
// mapping in order (YAML 1.1 merge-key type, as yaml.v3, and so Pulumi, decodes it).
func (r *reader) resolveMerges(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	for _, c := range n.Content {
		r.resolveMerges(c, seen)
	}
	if n.Kind == yaml.AliasNode {
		r.resolveMerges(n.Alias, seen)
		return
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	var own, merged []*yaml.Node
	hasMerge := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag != "!!merge" {
			own = append(own, k, v)
			continue
		}
		hasMerge = true
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, s := range sources {
			if s.Kind == yaml.AliasNode {
				s = s.Alias
			}
			if s == nil || s.Kind != yaml.MappingNode {
				r.fail(v.Line, "<<", "merge a mapping: <<: *anchor, where &anchor names a mapping", "a merge key takes a mapping or a list of mappings")
				continue
			}
			r.resolveMerges(s, seen)
			merged = append(merged, s.Content...)
		}
	}
	if !hasMerge {
		return
	}
	has := map[string]bool{}
	for i := 0; i < len(own); i += 2 {
		has[own[i].Value] = true
	}
	content := own
	for i := 0; i+1 < len(merged); i += 2 {
		if !has[merged[i].Value] {
			has[merged[i].Value] = true
			content = append(content, merged[i], merged[i+1])
		}
	}
	n.Content = content
}

// dropDuplicates reports every key set twice in one mapping, at any depth, and keeps the first:
// Pulumi refuses such a file, and a silent "last one wins" hides which value is used.
func (r *reader) dropDuplicates(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		first := map[string]int{}
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			full := childPath(path, keyText(k))
			if line, dup := first[k.Value]; dup && k.Kind == yaml.ScalarNode {
				r.fail(k.Line, full, "keep one "+keyText(k)+" and remove the other", "%s is set twice (first at line %d)", keyText(k), line)
				continue
			}
			first[k.Value] = k.Line
			r.dropDuplicates(v, full)
			kept = append(kept, k, v)
		}
		n.Content = kept
	case yaml.SequenceNode:
		for i, c := range n.Content {
			r.dropDuplicates(c, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// childPath names a key as errors do: config keys by their own name (gpucluster:pools), deeper
// keys by path (gpucluster:pools[0].labels.team).
func childPath(parent, key string) string {
	switch parent {
	case "":
		return key
	case "config":
		return key
	}
	return parent + "." + key
}
