package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
)

// TestGetTokenAnswersAnExecCredential: what pulumi-eks's kubeconfig runs gets the credential
// client-go reads (kind, apiVersion, status.token, a future expiry); anything else is refused.
func TestGetTokenAnswersAnExecCredential(t *testing.T) {
	t.Setenv(awsdouble.EnvToken, "harness-token")
	var out, errs strings.Builder
	if code := run([]string{"eks", "get-token", "--cluster-name", "dev", "--output", "json"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var cred struct {
		Kind, APIVersion string
		Status           struct{ Token, ExpirationTimestamp string }
	}
	if err := json.Unmarshal([]byte(out.String()), &cred); err != nil {
		t.Fatal(err)
	}
	if cred.Kind != "ExecCredential" || cred.APIVersion != "client.authentication.k8s.io/v1beta1" || cred.Status.Token != "harness-token" || cred.Status.ExpirationTimestamp == "" {
		t.Errorf("credential %+v", cred)
	}
	for _, args := range [][]string{
		{"eks", "get-token"}, // no cluster
		{"eks", "get-token", "--cluster-name", "dev", "--output", "text"},
		{"eks", "describe-cluster", "--name", "dev"}, // not answered
		{"s3", "ls"},
	} {
		out.Reset()
		if code := run(args, &out, &errs); code == 0 || out.Len() != 0 {
			t.Errorf("aws %v: exit %d, printed %q; want a refusal", args, code, out.String())
		}
	}
	t.Setenv(awsdouble.EnvToken, "")
	if code := run([]string{"eks", "get-token", "--cluster-name", "dev"}, &out, &errs); code == 0 {
		t.Error("no token set, and get-token succeeded")
	}
}
