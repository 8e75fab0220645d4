package topology

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SetConfigScalar sets one scalar key of a stack file's config block and changes nothing else:
// the key's own line is rewritten when it is there, or one line is added after `config:` with
// the block's indentation. Comments, order and formatting stay as the user wrote them. The value
// is written double-quoted.
func SetConfigScalar(data []byte, key, value string) ([]byte, error) {
	r := &reader{file: "(stack file)"}
	root, ok := r.document(data)
	if !ok {
		return nil, r.result()
	}
	config := MappingValue(root, "config")
	configLine := keyLine(root, "config")
	if config == nil || config.Kind != yaml.MappingNode || len(config.Content) == 0 {
		return nil, fmt.Errorf("the file has no config block with keys to add %s to", key)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	quoted := strconv.Quote(value)
	for i := 0; i+1 < len(config.Content); i += 2 {
		k, v := config.Content[i], config.Content[i+1]
		if k.Value != key {
			continue
		}
		if v.Kind != yaml.ScalarNode || v.Line != k.Line {
			return nil, fmt.Errorf("%s is not a one-line value at line %d: edit it by hand", key, k.Line)
		}
		line := string(lines[k.Line-1])
		colon := strings.Index(line, key+":")
		if colon < 0 {
			return nil, fmt.Errorf("cannot find %s on line %d: edit it by hand", key, k.Line)
		}
		end := "\n"
		if !strings.HasSuffix(line, "\n") {
			end = ""
		}
		comment := v.LineComment // "# why this date" after the value stays
		if comment == "" {
			comment = k.LineComment
		}
		if comment != "" {
			comment = " " + comment
		}
		lines[k.Line-1] = []byte(line[:colon] + key + ": " + quoted + comment + end)
		return bytes.Join(lines, nil), nil
	}
	first := config.Content[0]
	indent := strings.Repeat(" ", first.Column-1)
	insert := []byte(indent + key + ": " + quoted + "\n")
	if configLine < 1 || configLine > len(lines) || first.Line <= configLine {
		return nil, fmt.Errorf("the config block is written on one line: add %s by hand", key)
	}
	out := append(append(append([][]byte{}, lines[:configLine]...), insert), lines[configLine:]...)
	return bytes.Join(out, nil), nil
}
