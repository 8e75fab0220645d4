package k8sargs

import (
	"context"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestControllerFilledSecrets: an operator chart's Secrets are left to their controllers (JobSet's
// webhook certificate Secret as its v0.12.0 chart declares it: four keys, each "",
// charts/jobset/templates/internalcert/secret.yaml); a ConfigMap is not.
func TestControllerFilledSecrets(t *testing.T) {
	empty := pulumi.Map{"ca.crt": pulumi.String(""), "ca.key": pulumi.String(""), "tls.crt": pulumi.String(""), "tls.key": pulumi.String("")}
	for _, tc := range []struct {
		name, typ string
		data      any
		ignored   bool
	}{
		{"the JobSet chart's placeholder", "kubernetes:core/v1:Secret", empty, true},
		{"the Trainer chart's Secret, with no data", "kubernetes:core/v1:Secret", nil, true},
		{"a ConfigMap with empty values", "kubernetes:core/v1:ConfigMap", empty, false},
	} {
		props := pulumi.Map{"metadata": pulumi.Map{"name": pulumi.String("jobset-webhook-server-cert")}}
		if tc.data != nil {
			props["data"] = tc.data.(pulumi.Map)
		}
		res := ControllerFilledSecrets(context.Background(), &pulumi.ResourceTransformArgs{Custom: true, Type: tc.typ, Name: "x", Props: props,
			Opts: pulumi.ResourceOptions{IgnoreChanges: []string{"metadata.labels"}}})
		if got := res != nil && slices.Contains(res.Opts.IgnoreChanges, "data"); got != tc.ignored {
			t.Errorf("%s: data ignored %v, want %v", tc.name, got, tc.ignored)
		}
		if res != nil && !slices.Contains(res.Opts.IgnoreChanges, "metadata.labels") {
			t.Errorf("%s: the options it had are lost: %v", tc.name, res.Opts.IgnoreChanges)
		}
	}
}
