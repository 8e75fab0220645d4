// aws is the real-engine tests' stand-in of the AWS CLI, which pulumi-eks's kubeconfig runs
// (`aws eks get-token --cluster-name <name> --output json`, as its exec credential plugin) and
// whose version pulumi-eks checks before it creates a cluster (dependencies.js,
// assertCompatibleAWSCLIExists). It answers those two and refuses everything else. The token is
// the one the harness's API server accepts for the cluster whose endpoint the aws provider
// double answered ($GPUCLUSTER_AWS_DOUBLE_EKS_TOKEN): on EKS it is a presigned STS request that
// the cluster's authenticator checks, which needs AWS.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" {
		// The minimum pulumi-eks checks.
		fmt.Fprintln(stdout, "aws-cli/2.7.0 gpucluster-test-stand-in")
		return 0
	}
	if len(args) < 2 || args[0] != "eks" || args[1] != "get-token" {
		fmt.Fprintf(stderr, "aws CLI stand-in (gpucluster's real-engine tests): only `aws --version` and `aws eks get-token` are answered, not: %v\n", args)
		return 252 // the AWS CLI's exit code for a usage error
	}
	fs := flag.NewFlagSet("aws eks get-token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cluster := fs.String("cluster-name", "", "")
	output := fs.String("output", "json", "")
	fs.String("role", "", "")
	fs.String("region", "", "")
	if err := fs.Parse(args[2:]); err != nil {
		return 252
	}
	token := os.Getenv(awsdouble.EnvToken)
	switch {
	case *cluster == "":
		fmt.Fprintln(stderr, "aws: error: the following arguments are required: --cluster-name")
		return 252
	case *output != "json":
		fmt.Fprintf(stderr, "aws CLI stand-in: --output %s: only json is answered\n", *output)
		return 252
	case token == "":
		fmt.Fprintf(stderr, "aws CLI stand-in: %s is unset: the harness sets the token its API server accepts\n", awsdouble.EnvToken)
		return 255
	}
	// The ExecCredential the AWS CLI prints (client.authentication.k8s.io/v1beta1, what
	// pulumi-eks's kubeconfig asks for); EKS tokens live 15 minutes, the CLI says 14.
	cred := map[string]any{
		"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1beta1", "spec": map[string]any{},
		"status": map[string]any{"expirationTimestamp": time.Now().UTC().Add(14 * time.Minute).Format(time.RFC3339), "token": token},
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "    ")
	if err := enc.Encode(cred); err != nil {
		fmt.Fprintln(stderr, err)
		return 255
	}
	return 0
}
