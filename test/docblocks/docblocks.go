// Package docblocks reads the fenced blocks of the project's Markdown documents (README.md,
// docs/): the tests run the commands they show, as written.
package docblocks

import (
	"regexp"
	"strings"
)

// fence is one fenced block: its info string and its text.
var fence = regexp.MustCompile("(?ms)^```([^\n]*)\n(.*?)^```$")

// Block is one fenced block of a document.
type Block struct {
	// Info is the block's info string ("sh", "sh cluster", "yaml", ""), trimmed.
	Info string
	Text string
}

// The info strings of the sh blocks whose commands need a cluster.
const (
	// Cluster: commands whose input comes from a cluster. The documentation test
	// (cmd/gpucluster) checks only that each is accepted (no usage error).
	Cluster = "sh cluster"
	// Walkthrough: a walk from `pulumi up -s <stack>` to `pulumi destroy -s <stack>`, run as
	// written by the real-engine tier on the cluster its `pulumi up` built
	// (test/realengine/enginetest); the documentation test checks it as a Cluster block.
	Walkthrough = "sh walkthrough"
)

// Read returns the fenced blocks of a Markdown document, in order.
func Read(markdown string) []Block {
	var out []Block
	for _, m := range fence.FindAllStringSubmatch(markdown, -1) {
		out = append(out, Block{Info: strings.TrimSpace(m[1]), Text: m[2]})
	}
	return out
}
