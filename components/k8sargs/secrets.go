package k8sargs

import (
	"context"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ControllerFilledSecrets is a transform for an operator chart's children: the chart's Secrets
// are its controllers' webhook certificates, which their certificate rotators write (Kueue's,
// Kubeflow Trainer's and JobSet's charts declare one each, and no other Secret). JobSet's chart
// declares its keys, each "" (charts/jobset/templates/internalcert/secret.yaml at v0.12.0), so
// Pulumi owns them: without this, the next `pulumi up` finds the data changed and replaces the
// Secret (pulumi-kubernetes replaces a Secret whose data changed), and JobSet's webhooks serve a
// certificate the API server no longer trusts until the rotator makes a new one — on every `up`.
// The data is the controller's: changes to it are ignored. (The transform cannot look into the
// data to tell a placeholder from content: a Secret's data reaches it as a secret output.)
func ControllerFilledSecrets(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if args.Type != "kubernetes:core/v1:Secret" {
		return nil
	}
	opts := args.Opts
	if !slices.Contains(opts.IgnoreChanges, "data") {
		opts.IgnoreChanges = append(slices.Clone(opts.IgnoreChanges), "data")
	}
	return &pulumi.ResourceTransformResult{Props: args.Props, Opts: opts}
}
