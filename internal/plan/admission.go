package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/charts"
)

// chartFetched is a chart's line under "Fetched at deploy time": its reference, and where its
// objects are, or that they are not in the review and why.
func chartFetched(resource string, ref map[string]any) string {
	line := fmt.Sprintf("Helm chart `%v` %v, release `%v` in `%v`", ref["chart"], ref["version"], ref["release"], ref["namespace"])
	if reason, ok := ref["notRendered"]; ok {
		return line + fmt.Sprintf(": **not rendered** (%s). Its roles, webhooks and workloads are not in this review; they are created at deploy", oneLine(fmt.Sprint(reason)))
	}
	return line + fmt.Sprintf(" (%v): its %v objects are in `%s/`, and their power is listed above", ref["digest"], ref["objects"], chartsDir(resource))
}

// clusterRoleText is a ClusterRole's rules, or the roles it aggregates.
func clusterRoleText(obj map[string]any) string {
	if text := rulesText(obj["rules"]); text != "" {
		return text
	}
	agg, _ := obj["aggregationRule"].(map[string]any)
	selectors, _ := agg["clusterRoleSelectors"].([]any)
	var labels []string
	for _, s := range selectors {
		sel, _ := s.(map[string]any)
		match, _ := sel["matchLabels"].(map[string]any)
		for _, k := range topology.SortedKeys(match) {
			labels = append(labels, fmt.Sprintf("%s=%v", k, match[k]))
		}
	}
	if len(labels) > 0 {
		return "the rules of every ClusterRole labelled " + strings.Join(labels, " or ")
	}
	return "no rules"
}

// rulesText writes RBAC rules as "resources: verbs" lists, in bold where a wildcard grants every
// verb, resource or API group.
func rulesText(rules any) string {
	list, _ := rules.([]any)
	var out []string
	for _, r := range list {
		rule, _ := r.(map[string]any)
		what := joinAny(rule["resources"])
		if urls := joinAny(rule["nonResourceURLs"]); urls != "" {
			what = strings.TrimPrefix(what+", URLs "+urls, ", ")
		}
		text := fmt.Sprintf("%s: %s", what, joinAny(rule["verbs"]))
		var every []string
		for _, w := range []struct{ key, what string }{{"verbs", "verb"}, {"resources", "resource"}, {"apiGroups", "API group"}} {
			if slices.Contains(anyStrings(rule[w.key]), "*") {
				every = append(every, "every "+w.what)
			}
		}
		if len(every) > 0 {
			text = fmt.Sprintf("**%s (%s)**", text, strings.Join(every, ", "))
		}
		out = append(out, text)
	}
	return strings.Join(out, "; ")
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// webhookLines are a webhook configuration's webhooks, one line each: what it intercepts, its
// failure policy and timeout (admissionregistration.k8s.io/v1 defaults: Fail and 10 s), and the
// service the API server calls.
func webhookLines(obj map[string]any, from string) []string {
	kind := "validating"
	if obj["kind"] == "MutatingWebhookConfiguration" {
		kind = "mutating"
	}
	list, _ := obj["webhooks"].([]any)
	var out []string
	for _, h := range list {
		hook, _ := h.(map[string]any)
		policy, _ := hook["failurePolicy"].(string)
		if policy == "" {
			policy = "Fail"
		}
		policyText := policy
		if policy == "Fail" {
			policyText = "**Fail**"
		}
		timeout := "10"
		if t, ok := hook["timeoutSeconds"]; ok {
			timeout = fmt.Sprint(t)
		}
		where := ""
		if sel := selectorText(hook["namespaceSelector"]); sel != "" {
			where += " in namespaces where " + sel
		}
		if sel := selectorText(hook["objectSelector"]); sel != "" {
			where += " for objects where " + sel
		}
		out = append(out, fmt.Sprintf("- %s `%v` of `%s`%s: %s%s; failure policy %s; timeout %s s; calls %s",
			kind, hook["name"], nameOf(obj), from, interceptsText(hook["rules"]), where, policyText, timeout, serviceText(hook["clientConfig"])))
	}
	return out
}

// selectorText is a label selector as conditions ("name NotIn kube-system, kueue-system"), ""
// when it selects everything: a webhook's namespace or object selector narrows what it sees.
func selectorText(selector any) string {
	sel, _ := selector.(map[string]any)
	var conds []string
	labels, _ := sel["matchLabels"].(map[string]any)
	for _, k := range topology.SortedKeys(labels) {
		conds = append(conds, fmt.Sprintf("%s = %v", k, labels[k]))
	}
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		expr, _ := e.(map[string]any)
		cond := fmt.Sprintf("%v %v", expr["key"], expr["operator"])
		if values := joinAny(expr["values"]); values != "" {
			cond += " " + values
		}
		conds = append(conds, cond)
	}
	if len(conds) == 0 {
		return ""
	}
	return "`" + strings.Join(conds, "` and `") + "`"
}

// interceptsText is a webhook's rules: the operations on the resources of the API groups.
func interceptsText(rules any) string {
	list, _ := rules.([]any)
	var out []string
	for _, r := range list {
		rule, _ := r.(map[string]any)
		var resources []string
		for _, g := range anyStrings(rule["apiGroups"]) {
			for _, res := range anyStrings(rule["resources"]) {
				switch {
				case g == "*" || res == "*" || res == "*/*":
					resources = append(resources, "**"+strings.TrimPrefix(g+"/"+res, "/")+" (wildcard)**")
				case g == "":
					resources = append(resources, res)
				default:
					resources = append(resources, res+"."+g)
				}
			}
		}
		out = append(out, joinAny(rule["operations"])+" of "+strings.Join(resources, ", "))
	}
	if len(out) == 0 {
		return "nothing (no rules)"
	}
	return strings.Join(out, "; ")
}

func serviceText(clientConfig any) string {
	cc, _ := clientConfig.(map[string]any)
	if url, ok := cc["url"]; ok {
		return fmt.Sprintf("`%v`", url)
	}
	svc, _ := cc["service"].(map[string]any)
	return fmt.Sprintf("service `%v/%v`", svc["namespace"], svc["name"])
}

// apiServiceText is an APIService: the group and version the API server hands to which service,
// and whether it checks that service's certificate.
func apiServiceText(obj map[string]any, from string) string {
	spec, _ := obj["spec"].(map[string]any)
	line := fmt.Sprintf("- `%s`%s: every request for %v/%v goes to service `%v/%v`", nameOf(obj), from,
		spec["group"], spec["version"], mapOf(spec["service"])["namespace"], mapOf(spec["service"])["name"])
	if spec["insecureSkipTLSVerify"] == true {
		line += ", **without checking its certificate** (insecureSkipTLSVerify)"
	}
	return line
}

// registryOf is the registry an image reference is pulled from: the first element of the
// reference when it names a host (a dot or a port, or localhost), else Docker Hub, as the
// container runtime resolves it (distribution/reference's ParseNormalizedNamed).
func registryOf(image string) string {
	first, _, ok := strings.Cut(image, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io (Docker Hub)"
}

// chartInventory counts each chart's objects by kind, or says why it has none in the bundle.
func chartInventory(rendered []charts.Rendered) string {
	if len(rendered) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("**Helm charts** (their objects are children of the chart's resource; each is in `manifests/chart-<resource>/`):\n\n| chart resource | chart | objects |\n|---|---|---|\n")
	for _, c := range rendered {
		q := c.Request
		if c.Reason != "" {
			fmt.Fprintf(&b, "| %s | `%s` %s | not rendered: %s |\n", q.Resource, q.Chart, q.Version, oneLine(c.Reason))
			continue
		}
		kinds := map[string]int{}
		for _, o := range c.Objects {
			kinds[o.Kind()]++
		}
		var items []string
		for _, k := range topology.SortedKeys(kinds) {
			items = append(items, fmt.Sprintf("%s × %d", k, kinds[k]))
		}
		fmt.Fprintf(&b, "| %s | `%s` %s | %d: %s |\n", q.Resource, q.Chart, q.Version, len(c.Objects), strings.Join(items, ", "))
	}
	b.WriteString("\n")
	return b.String()
}

// oneLine keeps a reason within its table cell or list item.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "|", "\\|").Replace(strings.TrimSpace(s))
}
