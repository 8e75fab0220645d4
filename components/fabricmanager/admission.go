package fabricmanager

import (
	"fmt"

	admissionv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/admissionregistration/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// PolicyName names the ValidatingAdmissionPolicy (and its binding) that confines the taint
// lifter's node patches.
const PolicyName = "gpucluster-fabricmanager-own-node"

// nodeNameExtra is the user-info extra the API server gives a service-account token bound to a
// pod: the node the pod runs on (KEP-4193, ServiceAccountTokenPodNodeInfo, beta and on in 1.30,
// GA 1.32; topology.OldestKubernetesMinor is 32, and a test holds it at 30 or more). Upstream's
// e2e test of per-node restriction reads it the same way (kubernetes v1.36.2
// test/e2e/auth/e2edata/per_node_validatingadmissionpolicy.yaml).
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// lifterUser is the lifter's user name as the API server authenticates its token.
const lifterUser = "system:serviceaccount:" + k8sargs.Namespace + ":" + ServiceAccount

// ownNodeRules are the policy's checks, each a CEL expression with its message. RBAC cannot name
// a DaemonSet's node (any node may run it), so RBAC grants patch on nodes and these narrow it: the
// node the pod's own token names, and on it nothing but the removal of the startup taint.
func ownNodeRules() []struct{ expr, message string } {
	key := topology.FabricManagerTaint.Key
	return []struct{ expr, message string }{
		{`variables.userNode != ""`,
			"the token names no node: the taint lifter must run in a pod on a node (its service-account token then carries " + nodeNameExtra + ")"},
		{`variables.userNode == object.metadata.name`,
			"the taint lifter may patch only the node its pod runs on"},
		{fmt.Sprintf(`object.spec.?taints.orValue([]) == oldObject.spec.?taints.orValue([]).filter(t, t.key != %q)`, key),
			"the taint lifter may only remove " + key + ": a patch must remove it, and no other taint"},
		{`object.metadata.?labels.orValue({}) == oldObject.metadata.?labels.orValue({}) && ` +
			`object.metadata.?annotations.orValue({}) == oldObject.metadata.?annotations.orValue({}) && ` +
			`object.spec.?unschedulable.orValue(false) == oldObject.spec.?unschedulable.orValue(false)`,
			"the taint lifter may not change a node's labels, annotations or schedulability"},
	}
}

// ownNodePolicy creates the policy and its binding (deny on failure, fail closed if the policy
// cannot be evaluated). The lifter's RBAC grant must depend on the returned binding, so the grant
// never exists without the limit, on up or destroy.
func ownNodePolicy(ctx *pulumi.Context, name string, labels map[string]string, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	var validations admissionv1.ValidationArray
	for _, r := range ownNodeRules() {
		// Forbidden (403): without a reason a denial is Invalid, HTTP 422 (apiserver
		// pkg/admission/plugin/policy/validating/dispatcher.go), which liftTaint reads as a JSON
		// patch test that missed and would walk past, reporting no taint instead of the denial.
		validations = append(validations, admissionv1.ValidationArgs{Expression: pulumi.String(r.expr), Message: pulumi.String(r.message),
			Reason: pulumi.String("Forbidden")})
	}
	policy, err := admissionv1.NewValidatingAdmissionPolicy(ctx, name+"-policy", &admissionv1.ValidatingAdmissionPolicyArgs{
		Metadata: k8sargs.Metadata(PolicyName, "", labels),
		Spec: &admissionv1.ValidatingAdmissionPolicySpecArgs{
			FailurePolicy: pulumi.String("Fail"),
			MatchConstraints: &admissionv1.MatchResourcesArgs{ResourceRules: admissionv1.NamedRuleWithOperationsArray{
				admissionv1.NamedRuleWithOperationsArgs{
					ApiGroups: pulumi.ToStringArray([]string{""}), ApiVersions: pulumi.ToStringArray([]string{"v1"}),
					Operations: pulumi.ToStringArray([]string{"UPDATE"}), Resources: pulumi.ToStringArray([]string{"nodes"}),
				},
			}},
			MatchConditions: admissionv1.MatchConditionArray{admissionv1.MatchConditionArgs{
				Name: pulumi.String("is-taint-lifter"), Expression: pulumi.String(fmt.Sprintf("request.userInfo.username == %q", lifterUser)),
			}},
			Variables: admissionv1.VariableArray{admissionv1.VariableArgs{
				Name: pulumi.String("userNode"), Expression: pulumi.String(fmt.Sprintf("request.userInfo.extra[?%q][0].orValue(\"\")", nodeNameExtra)),
			}},
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
