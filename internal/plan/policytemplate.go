package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/fakecloud"
)

// rolePolicyType is an inline IAM policy.
const rolePolicyType = "aws:iam/rolePolicy:RolePolicy"

// policyTemplates are the inline IAM policies whose text a plan cannot show, because it names
// ARNs AWS gives only at deploy (the Karpenter controller's names its interruption queue and node
// role): each as the document the program writes, with a placeholder for each such ARN,
// "<ARN of <type> <name>>". The program runs a second time with the offline engine's made-up
// values (fakecloud, the same the tests run it with), and each made-up ARN in the text is
// replaced by the placeholder of the resource it was made up for. Keyed by the policy's URN.
func policyTemplates(spec topology.StackSpec, planned []offline.Resource) (map[string]any, error) {
	unknown := map[string]bool{}
	for _, r := range planned {
		if r.Type == rolePolicyType && offline.Plain(r.Inputs["policy"]) == offline.Unknown {
			unknown[r.URN] = true
		}
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	engine := offline.NewEngine(spec.Stack)
	if err := engine.Run(program.RunSpec(spec)); err != nil {
		return nil, fmt.Errorf("evaluating the program with made-up ARNs: %w", err)
	}
	deployed := engine.Resources()
	type placeholder struct{ arn, text string }
	var placeholders []placeholder
	for _, r := range deployed {
		if _, given := r.Inputs["arn"]; !r.Custom || given { // an EventTarget's arn is its target's
			continue
		}
		if arn := fakecloud.Outputs(r.Type, r.Name, r.Inputs, r.ID)["arn"]; arn.IsString() {
			placeholders = append(placeholders, placeholder{arn.StringValue(), fmt.Sprintf("<ARN of %s %s>", r.Type, r.Name)})
		}
	}
	// Longest first: one ARN may begin another (a role's and its path's).
	slices.SortFunc(placeholders, func(a, b placeholder) int { return cmp.Compare(len(b.arn), len(a.arn)) })
	out := map[string]any{}
	for _, r := range deployed {
		if !unknown[r.URN] {
			continue
		}
		text, _ := offline.Plain(r.Inputs["policy"]).(string)
		// Each made-up ARN is first masked by a mark that holds no name, and the placeholders,
		// which name their resources, are written in only after the check: a cluster or pool name
		// may hold the account's digits ("c-123456789012"), and the policy may name the cluster
		// outside any ARN (Karpenter's tag conditions).
		for i, p := range placeholders {
			text = strings.ReplaceAll(text, p.arn, placeholderMark(i))
		}
		left := madeUpAccount.MatchString(text)
		for i, p := range placeholders {
			text = strings.ReplaceAll(text, placeholderMark(i), p.text)
		}
		if left {
			return nil, fmt.Errorf("%s: a made-up ARN in its policy names no resource of the stack: %s", r.Name, text)
		}
		var doc any
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			return nil, fmt.Errorf("%s: its policy is not JSON: %w", r.Name, err)
		}
		out[r.URN] = doc
	}
	return out, nil
}

// placeholderMark stands for the i-th made-up ARN while the policy is checked: a NUL, which the
// JSON text of a policy cannot hold unescaped, and a number, no name.
func placeholderMark(i int) string { return fmt.Sprintf("\x00%d\x00", i) }

// madeUpAccount is the made-up account where a policy holds an account: an ARN's account field
// (between colons) or a whole JSON string. No cluster or pool name ([a-z0-9-]) makes either.
var madeUpAccount = regexp.MustCompile(`:` + fakecloud.Account + `:|"` + fakecloud.Account + `"`)
