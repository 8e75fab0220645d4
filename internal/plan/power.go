package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/internal/k8sobj"
)

// inventorySection lists every resource the plan registers, grouped by the gpucluster component
// it is part of (the network, the cluster, each pool, each in-cluster piece), with what
// pulumi-eks creates inside its own component under "Inside pulumi-eks".
func inventorySection(resources []offline.Resource) string {
	byURN := map[string]offline.Resource{}
	for _, r := range resources {
		byURN[r.URN] = r
	}
	owner := func(r offline.Resource) string {
		for p, ok := byURN[r.Parent]; ok; p, ok = byURN[p.Parent] {
			if strings.HasPrefix(p.Type, "gpucluster:index:") {
				return fmt.Sprintf("`%s` %s", strings.TrimPrefix(p.Type, "gpucluster:index:"), p.Name)
			}
		}
		return "(stack)"
	}
	counts := map[string]map[string]int{}
	var groups []string
	for _, r := range resources {
		if !r.Custom || strings.HasPrefix(r.Type, "pulumi:providers:") {
			continue
		}
		g := owner(r)
		if counts[g] == nil {
			counts[g] = map[string]int{}
			groups = append(groups, g)
		}
		counts[g][shortType(r.Type)]++
	}
	var b strings.Builder
	b.WriteString("## Inventory\n\nEvery resource `pulumi up` creates, by the part of the cluster it belongs to (types as `provider module Kind`; plan.json has each one's inputs):\n\n| part | resources |\n|---|---|\n")
	for _, g := range groups {
		var items []string
		for _, t := range topology.SortedKeys(counts[g]) {
			items = append(items, fmt.Sprintf("%s × %d", t, counts[g][t]))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", g, strings.Join(items, ", "))
	}
	b.WriteString("\nThe EKS component (`eks:index:Cluster`) creates more inside itself: see \"Inside pulumi-eks\".\n\n")
	return b.String()
}

// shortType writes a type token as provider, module and kind: "aws ec2 Subnet", "kubernetes apps DaemonSet".
func shortType(t string) string {
	parts := strings.SplitN(t, ":", 3)
	if len(parts) != 3 {
		return t
	}
	module, _, _ := strings.Cut(parts[1], "/")
	return parts[0] + " " + module + " " + parts[2]
}

// powerSection says what the stack may do and what runs with power: each IAM role, who may
// assume it and its policies; each ClusterRole's and Role's rules; each admission webhook and
// aggregated API; every pod that is privileged or reaches into its host; and everything fetched
// from the internet at deploy time. A Helm chart's objects (manifests/chart-<resource>/) are
// weighed as gpucluster's own, each marked with its chart.
func powerSection(resources []offline.Resource, templates map[string]any, manifests map[string][]byte) (string, error) {
	var b strings.Builder
	b.WriteString("## IAM and cluster-wide power\n\n")
	b.WriteString(rolesTable(resources))
	b.WriteString(inlinePolicies(resources, templates))
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range manifests {
			if !yield(p) {
				return
			}
		}
	})
	var roles, nsRoles, limits, hooks, apis, pods, fetched []string
	images := map[string][]string{}
	for _, p := range paths {
		var obj map[string]any
		if err := yaml.Unmarshal(manifests[p], &obj); err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(p, "manifests/"), ".yaml")
		chart := chartOf(p)
		from := "" // which chart an object comes from; gpucluster's own say nothing
		if chart != "" {
			from = fmt.Sprintf(" (chart `%s`)", chart)
		}
		switch {
		case chart == "" && strings.HasPrefix(name, "chart-"):
			fetched = append(fetched, chartFetched(strings.TrimPrefix(name, "chart-"), obj))
		case chart == "" && strings.HasPrefix(name, "configfile-"):
			fetched = append(fetched, fmt.Sprintf("`%v`, applied as is", obj["file"]))
		case obj["kind"] == "ClusterRole":
			roles = append(roles, fmt.Sprintf("- `%s`%s: %s", nameOf(obj), from, clusterRoleText(obj)))
		case obj["kind"] == "ValidatingWebhookConfiguration" || obj["kind"] == "MutatingWebhookConfiguration":
			hooks = append(hooks, webhookLines(obj, from)...)
		case obj["kind"] == "APIService":
			apis = append(apis, apiServiceText(obj, from))
		case obj["kind"] == "ValidatingAdmissionPolicy":
			limits = append(limits, policyText(obj, from))
		case obj["kind"] == "Role":
			meta, _ := obj["metadata"].(map[string]any)
			nsRoles = append(nsRoles, fmt.Sprintf("- `%s` in namespace `%v`%s: %s", nameOf(obj), meta["namespace"], from, rulesText(obj["rules"])))
		default:
			for _, spec := range k8sobj.PodSpecs(obj) {
				if power := podPower(spec); len(power) > 0 {
					pods = append(pods, fmt.Sprintf("- %s `%s`%s: %s", obj["kind"], nameOf(obj), from, strings.Join(power, "; ")))
				}
				for _, img := range podImages(spec) {
					user := "`" + nameOf(obj) + "`"
					if chart != "" {
						user += " of chart `" + chart + "`"
					}
					if !slices.Contains(images[img], user) {
						images[img] = append(images[img], user)
					}
				}
			}
		}
	}
	b.WriteString("\n**ClusterRoles** (cluster-wide Kubernetes permissions; **bold** where a wildcard grants every verb, resource or API group):\n\n")
	if len(roles) == 0 {
		roles = []string{"- none"}
	}
	b.WriteString(strings.Join(roles, "\n") + "\n")
	if len(limits) > 0 {
		b.WriteString("\n**Admission policies** (what the API server refuses whatever RBAC grants):\n\n" + strings.Join(limits, "\n") + "\n")
	}
	if len(nsRoles) > 0 {
		b.WriteString("\n**Roles** (permissions within one namespace):\n\n" + strings.Join(nsRoles, "\n") + "\n")
	}
	b.WriteString("\n**Admission webhooks** (services the API server calls before it stores what they intercept; " +
		"with failure policy **Fail**, while the service does not answer the API server refuses what it intercepts, with Ignore it lets it pass unchecked):\n\n")
	if len(hooks) == 0 {
		hooks = []string{"- none"}
	}
	b.WriteString(strings.Join(hooks, "\n") + "\n")
	if len(apis) > 0 {
		b.WriteString("\n**Aggregated APIs** (API groups the API server hands to a service of the cluster):\n\n" + strings.Join(apis, "\n") + "\n")
	}
	b.WriteString("\n**Privileged or host-level pods:**\n\n")
	if len(pods) == 0 {
		pods = []string{"- none"}
	}
	b.WriteString(strings.Join(pods, "\n") + "\n")
	b.WriteString("\n**Fetched at deploy time** (by `pulumi up`, or by the nodes when a pod starts):\n\n")
	for _, r := range resources {
		if r.Type == "aws:eks/addon:Addon" {
			in := offline.PlainMap(r.Inputs)
			version, _ := in["addonVersion"].(string)
			if version == "" {
				version = "EKS's default version for the cluster's Kubernetes version"
			}
			fetched = append(fetched, fmt.Sprintf("EKS add-on `%v`, %s (EKS installs its objects and images; they are not in `manifests/`)", in["addonName"], version))
		}
	}
	for _, f := range fetched {
		b.WriteString("- " + f + "\n")
	}
	for _, img := range topology.SortedKeys(images) {
		fmt.Fprintf(&b, "- image `%s` from %s (%s)\n", img, registryOf(img), strings.Join(images[img], ", "))
	}
	if _, ok := images[topology.DefaultTrainingImage]; ok {
		fmt.Fprintf(&b, "\n`%s` is gpucluster's default benchmark image and its health gate's EFA check (EFA installer 1.48). The EFA installer 1.50 stack's tag, `%s`, is not the default: nothing gpucluster can read confirms it is published (its own README says to use it once it is). A stack may name it in `gpucluster:trainingImage`.\n",
			topology.DefaultTrainingImage, topology.UnconfirmedTrainingImage)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// rolesTable lists each IAM role: who may assume it, and its managed and inline policies.
func rolesTable(resources []offline.Resource) string {
	attached, inline, usedBy := map[string][]string{}, map[string]int{}, map[string][]string{}
	for _, r := range resources {
		in := offline.PlainMap(r.Inputs)
		role, _ := in["role"].(string)
		switch r.Type {
		case "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
			arn, _ := in["policyArn"].(string)
			attached[role] = append(attached[role], arn[strings.LastIndex(arn, "/")+1:])
		case "aws:iam/rolePolicy:RolePolicy":
			inline[role]++
		case "aws:eks/podIdentityAssociation:PodIdentityAssociation":
			sa, _ := in["serviceAccount"].(string)
			usedBy[r.Name] = append(usedBy[r.Name], sa)
		case "aws:eks/addon:Addon": // an add-on's own associations (CreateAddon podIdentityAssociations)
			assocs, _ := in["podIdentityAssociations"].([]any)
			for _, a := range assocs {
				m, _ := a.(map[string]any)
				sa, _ := m["serviceAccount"].(string)
				usedBy[r.Name] = append(usedBy[r.Name], sa)
			}
		}
	}
	var b strings.Builder
	b.WriteString("| IAM role | assumed by | policies |\n|---|---|---|\n")
	for _, r := range resources {
		if r.Type != "aws:iam/role:Role" {
			continue
		}
		in := offline.PlainMap(r.Inputs)
		name, _ := in["name"].(string)
		policies := append([]string{}, attached[name]...)
		if n := inline[name]; n > 0 {
			policies = append(policies, fmt.Sprintf("%d inline (below)", n))
		}
		if len(policies) == 0 {
			policies = []string{"none"}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, principals(in["assumeRolePolicy"]), strings.Join(policies, ", "))
	}
	for _, assoc := range topology.SortedKeys(usedBy) {
		fmt.Fprintf(&b, "\nEKS Pod Identity `%s` gives a role to the service account `%s`.\n", assoc, strings.Join(usedBy[assoc], "`, `"))
	}
	return b.String()
}

// inlinePolicies writes every inline IAM policy statement by statement: the text the program
// writes, or where it names ARNs known only at deploy, its template with a placeholder for each
// (policyTemplates; plan.json's policyTemplate).
func inlinePolicies(resources []offline.Resource, templates map[string]any) string {
	var b strings.Builder
	for _, r := range resources {
		if r.Type != rolePolicyType {
			continue
		}
		in := offline.PlainMap(r.Inputs)
		doc := templates[r.URN]
		if text, ok := in["policy"].(string); ok && text != offline.Unknown {
			if json.Unmarshal([]byte(text), &doc) != nil {
				doc = nil
			}
		}
		if b.Len() == 0 {
			b.WriteString("\n**Inline policies** (`<ARN of …>` stands for an ARN AWS gives at deploy):\n")
		}
		fmt.Fprintf(&b, "\n`%s` on role `%v`:\n\n", r.Name, in["role"])
		statements, _ := mapOf(doc)["Statement"].([]any)
		if len(statements) == 0 {
			b.WriteString("- its text is unknown until deploy\n")
		}
		for _, st := range statements {
			b.WriteString("- " + statementText(mapOf(st)) + "\n")
		}
	}
	return b.String()
}

// statementText is one IAM statement as a line: its id, effect, actions, resources and conditions.
func statementText(st map[string]any) string {
	line := fmt.Sprintf("`%v`: %v %s on %s", st["Sid"], strings.ToLower(fmt.Sprint(st["Effect"])), listText(st["Action"]), listText(st["Resource"]))
	var conds []string
	for _, op := range topology.SortedKeys(mapOf(st["Condition"])) {
		keys := mapOf(mapOf(st["Condition"])[op])
		for _, k := range topology.SortedKeys(keys) {
			conds = append(conds, fmt.Sprintf("%s %s = %s", op, k, listText(keys[k])))
		}
	}
	if len(conds) > 0 {
		line += "; when " + strings.Join(conds, ", ")
	}
	return line
}

// listText is a JSON string or list of strings, comma-separated.
func listText(v any) string {
	if list, ok := v.([]any); ok {
		return joinAny(list)
	}
	return fmt.Sprint(v)
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// principals are the services a trust policy lets assume its role.
func principals(policy any) string {
	text, _ := policy.(string)
	var doc struct {
		Statement []struct {
			Principal map[string]any
		}
	}
	if json.Unmarshal([]byte(text), &doc) != nil {
		return "computed at deploy (it names the account)"
	}
	var out []string
	for _, s := range doc.Statement {
		for kind, v := range s.Principal {
			out = append(out, fmt.Sprintf("%s %v", kind, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func nameOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}

func joinAny(v any) string { return strings.Join(anyStrings(v), ", ") }

// policyText is a ValidatingAdmissionPolicy as a line: whom it applies to (its match
// conditions) and what it refuses (its validations' messages).
func policyText(obj map[string]any, from string) string {
	spec, _ := obj["spec"].(map[string]any)
	var when, refuses []string
	conds, _ := spec["matchConditions"].([]any)
	for _, c := range conds {
		cond, _ := c.(map[string]any)
		when = append(when, fmt.Sprintf("`%v`", cond["expression"]))
	}
	checks, _ := spec["validations"].([]any)
	for _, c := range checks {
		check, _ := c.(map[string]any)
		refuses = append(refuses, fmt.Sprint(check["message"]))
	}
	return fmt.Sprintf("- `%s`%s, when %s: %s", nameOf(obj), from, strings.Join(when, " and "), strings.Join(refuses, "; "))
}

// podPower is what a pod spec may do beyond an ordinary container.
func podPower(spec map[string]any) []string {
	var out []string
	for _, k := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if spec[k] == true {
			out = append(out, k)
		}
	}
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		vol, _ := v.(map[string]any)
		if hp, ok := vol["hostPath"].(map[string]any); ok {
			out = append(out, fmt.Sprintf("host path %v", hp["path"]))
		}
	}
	var containers []any
	for _, key := range []string{"initContainers", "containers"} {
		list, _ := spec[key].([]any)
		containers = append(containers, list...)
	}
	for _, c := range containers {
		ctr, _ := c.(map[string]any)
		sc, _ := ctr["securityContext"].(map[string]any)
		if sc["privileged"] == true {
			if len(containers) > 1 { // which one: a reviewer weighs that container alone
				out = append(out, fmt.Sprintf("privileged (container %v)", ctr["name"]))
			} else {
				out = append(out, "privileged")
			}
		}
		if caps, ok := sc["capabilities"].(map[string]any); ok && caps["add"] != nil {
			out = append(out, "adds "+joinAny(caps["add"]))
		}
		if strings.Contains(fmt.Sprint(ctr["command"], ctr["args"]), "apt-get") {
			out = append(out, "installs packages at start (apt-get): its node needs egress to the image's package mirrors")
		}
	}
	return out
}

func podImages(spec map[string]any) []string {
	var out []string
	for _, key := range []string{"initContainers", "containers"} {
		list, _ := spec[key].([]any)
		for _, c := range list {
			ctr, _ := c.(map[string]any)
			if img, ok := ctr["image"].(string); ok {
				out = append(out, img)
			}
		}
	}
	return out
}
