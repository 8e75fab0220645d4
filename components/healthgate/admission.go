package healthgate

import (
	"fmt"

	admissionv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/admissionregistration/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// PolicyName names the ValidatingAdmissionPolicy (and its binding) that confines the gate's
// writes.
const PolicyName = "gpucluster-health-gate-own-node"

// nodeNameExtra is the user-info extra the API server gives a service-account token bound to a
// pod: the node the pod runs on (KEP-4193, ServiceAccountTokenPodNodeInfo, beta and on in 1.30,
// GA 1.32; topology.OldestKubernetesMinor is 32, and a test holds it at 30 or more). Upstream's
// e2e test of per-node restriction reads it the same way (kubernetes v1.36.2
// test/e2e/auth/e2edata/per_node_validatingadmissionpolicy.yaml).
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// gateUser is the gate's user name as the API server authenticates its token.
const gateUser = "system:serviceaccount:" + k8sargs.Namespace + ":" + ServiceAccount

// ownNodeRules are the policy's checks, each a CEL expression with its message. RBAC cannot name
// a DaemonSet's node (any node may run it), so RBAC grants patch on nodes and create on events,
// and these narrow both: the node the pod's own token names; on it nothing but the removal of
// the health taint and the health label (no other taint or label, annotation, owner reference,
// finalizer or schedulability); events about that node only.
func ownNodeRules() []struct{ expr, message string } {
	taint, label := topology.HealthTaint.Key, topology.LabelHealthFailed
	isNodes, isEvents := `request.resource.resource != "nodes" || `, `request.resource.resource != "events" || `
	return []struct{ expr, message string }{
		{`variables.userNode != ""`,
			"the token names no node: the health gate must run in a pod on a node (its service-account token then carries " + nodeNameExtra + ")"},
		{isNodes + `variables.userNode == object.metadata.name`,
			"the health gate may patch only the node its pod runs on"},
		{isNodes + fmt.Sprintf(`object.spec.?taints.orValue([]) == oldObject.spec.?taints.orValue([]) || `+
			`object.spec.?taints.orValue([]) == oldObject.spec.?taints.orValue([]).filter(t, t.key != %q)`, taint),
			"the health gate may only remove " + taint + ", and no other taint"},
		{isNodes + fmt.Sprintf(`variables.oldLabels.all(k, k == %[1]q || (k in variables.newLabels && variables.newLabels[k] == variables.oldLabels[k])) && `+
			`variables.newLabels.all(k, k == %[1]q || k in variables.oldLabels)`, label),
			"the health gate may change no label but " + label},
		// An owner reference to an object that does not exist gets the Node garbage-collected,
		// with its pods; a finalizer leaves a deleted Node Terminating: the gate touches neither.
		{isNodes + `object.metadata.?annotations.orValue({}) == oldObject.metadata.?annotations.orValue({}) && ` +
			`object.metadata.?ownerReferences.orValue([]) == oldObject.metadata.?ownerReferences.orValue([]) && ` +
			`object.metadata.?finalizers.orValue([]) == oldObject.metadata.?finalizers.orValue([]) && ` +
			`object.spec.?unschedulable.orValue(false) == oldObject.spec.?unschedulable.orValue(false)`,
			"the health gate may not change a node's annotations, owner references, finalizers or schedulability"},
		{isEvents + `object.involvedObject.kind == "Node" && object.involvedObject.name == variables.userNode`,
			"the health gate may only report events about the node its pod runs on"},
	}
}

// ownNodePolicy creates the policy and its binding (deny on failure, fail closed if the policy
// cannot be evaluated). The gate's RBAC grants must depend on the returned binding, so no grant
// exists without the limit, on up or destroy.
func ownNodePolicy(ctx *pulumi.Context, name string, labels map[string]string, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	var validations admissionv1.ValidationArray
	for _, r := range ownNodeRules() {
		// Forbidden (403): without a reason a denial is Invalid, HTTP 422 (apiserver
		// pkg/admission/plugin/policy/validating/dispatcher.go), which liftTaint reads as a JSON
		// patch test that missed and would walk past, reporting no taint instead of the denial.
		validations = append(validations, admissionv1.ValidationArgs{Expression: pulumi.String(r.expr), Message: pulumi.String(r.message),
			Reason: pulumi.String("Forbidden")})
	}
	rule := func(resource, operation string) admissionv1.NamedRuleWithOperationsArgs {
		return admissionv1.NamedRuleWithOperationsArgs{
			ApiGroups: pulumi.ToStringArray([]string{""}), ApiVersions: pulumi.ToStringArray([]string{"v1"}),
			Operations: pulumi.ToStringArray([]string{operation}), Resources: pulumi.ToStringArray([]string{resource}),
		}
	}
	policy, err := admissionv1.NewValidatingAdmissionPolicy(ctx, name+"-policy", &admissionv1.ValidatingAdmissionPolicyArgs{
		Metadata: k8sargs.Metadata(PolicyName, "", labels),
		Spec: &admissionv1.ValidatingAdmissionPolicySpecArgs{
			FailurePolicy: pulumi.String("Fail"),
			MatchConstraints: &admissionv1.MatchResourcesArgs{ResourceRules: admissionv1.NamedRuleWithOperationsArray{
				rule("nodes", "UPDATE"), rule("events", "CREATE"),
			}},
			MatchConditions: admissionv1.MatchConditionArray{admissionv1.MatchConditionArgs{
				Name: pulumi.String("is-health-gate"), Expression: pulumi.String(fmt.Sprintf("request.userInfo.username == %q", gateUser)),
			}},
			// Evaluated only where a rule reads them: an event's create has no old object.
			Variables: admissionv1.VariableArray{
				admissionv1.VariableArgs{Name: pulumi.String("userNode"), Expression: pulumi.String(fmt.Sprintf("request.userInfo.extra[?%q][0].orValue(\"\")", nodeNameExtra))},
				admissionv1.VariableArgs{Name: pulumi.String("oldLabels"), Expression: pulumi.String("oldObject.metadata.?labels.orValue({})")},
				admissionv1.VariableArgs{Name: pulumi.String("newLabels"), Expression: pulumi.String("object.metadata.?labels.orValue({})")},
			},
			Validations: validations,
		},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return admissionv1.NewValidatingAdmissionPolicyBinding(ctx, name+"-policy-binding", &admissionv1.ValidatingAdmissionPolicyBindingArgs{
		Metadata: k8sargs.Metadata(PolicyName, "", labels),
		Spec: &admissionv1.ValidatingAdmissionPolicyBindingSpecArgs{
			PolicyName:        pulumi.String(PolicyName),
			ValidationActions: pulumi.ToStringArray([]string{"Deny"}),
		},
	}, append(opts, pulumi.DependsOn([]pulumi.Resource{policy}))...)
}
