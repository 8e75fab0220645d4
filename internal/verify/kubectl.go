package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Kubectl reads the cluster kubectl is configured for: Kubeconfig and Context when set, else
// what kubectl itself resolves (KUBECONFIG, then ~/.kube/config), with whatever credential
// plugin the kubeconfig names (`aws eks get-token` on EKS). kubectl is used rather than an API
// client of our own so that every way a kubeconfig authenticates works as it does for the user.
// Only `kubectl get` runs: verify changes nothing.
type Kubectl struct {
	Path       string // "" is kubectl on PATH
	Kubeconfig string
	Context    string
}

// unservedMessage is kubectl's error for a resource type the API server does not serve (its
// CRD is not installed): kubectl's cmd/get, "the server doesn't have a resource type".
const unservedMessage = "the server doesn't have a resource type"

// errUnserved marks a resource the API server does not serve.
var errUnserved = errors.New("not served")

// RequestTimeout bounds each request: an unreachable API server is said in seconds, not after
// kubectl's default of waiting forever.
const RequestTimeout = "30s"

// Command is kubectl with the kubeconfig and context, running args. Verify runs only `get`;
// `gpucluster bench run`, which applies and deletes its jobs, shares this way to the cluster.
func (k Kubectl) Command(ctx context.Context, args ...string) *exec.Cmd {
	path := k.Path
	if path == "" {
		path = "kubectl"
	}
	var global []string
	if k.Kubeconfig != "" {
		global = append(global, "--kubeconfig", k.Kubeconfig)
	}
	if k.Context != "" {
		global = append(global, "--context", k.Context)
	}
	return exec.CommandContext(ctx, path, append(global, args...)...)
}

// Run runs kubectl with args and the request timeout, and returns its standard output; its
// error carries kubectl's own message. Commands that change the cluster (bench run, health)
// reach it this way, verify only with get.
func (k Kubectl) Run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := k.Command(ctx, append(args, "--request-timeout", RequestTimeout)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %s", strings.Join(args, " "), msg)
	}
	return stdout.Bytes(), nil
}

// get lists one resource as JSON.
func (k Kubectl) get(ctx context.Context, resource string, args ...string) ([]byte, error) {
	cmd := k.Command(ctx, append([]string{"get", resource, "-o", "json", "--request-timeout", RequestTimeout}, args...)...)
	path, argv := cmd.Path, cmd.Args[1:]
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, unservedMessage) {
			return nil, errUnserved
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) { // kubectl did not run at all
			return nil, fmt.Errorf("running %s: %w (verify reads the cluster with kubectl 1.24 or newer: gpucluster preflight checks it)", path, err)
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("kubectl %s: %s", strings.Join(argv, " "), msg)
	}
	return stdout.Bytes(), nil
}

// list decodes a kubectl List's items.
func list[T any](b []byte, resource string) ([]T, error) {
	var l struct {
		Items []T `json:"items"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("reading kubectl's list of %s: %w", resource, err)
	}
	return l.Items, nil
}

// Read reads what verifying the spec needs: the nodes of pools, the node agents' pods, and the
// controllers' objects of the kinds the spec's pools use.
func (k Kubectl) Read(ctx context.Context, spec topology.StackSpec) (*Cluster, error) {
	c := &Cluster{Objects: map[string][]Object{}}
	// Only nodes of a pool, gpucluster's or another's: a large cluster's other nodes are not read.
	b, err := k.get(ctx, "nodes", "-l", topology.LabelPool)
	if err != nil {
		return nil, err
	}
	if c.Nodes, err = list[Node](b, "nodes"); err != nil {
		return nil, err
	}
	selector := "app.kubernetes.io/name in (" + strings.Join(AgentNames(), ",") + ")"
	if b, err = k.get(ctx, "pods", "-n", k8sargs.Namespace, "-l", selector); err != nil {
		return nil, err
	}
	if c.Pods, err = list[Pod](b, "pods"); err != nil {
		return nil, err
	}
	for _, r := range objectsNeeded(spec) {
		var args []string
		if r == ResourceComputeDomains {
			args = []string{"-n", topology.BenchmarkNamespace}
		}
		b, err := k.get(ctx, r, args...)
		if errors.Is(err, errUnserved) {
			c.Unserved = append(c.Unserved, r)
			continue
		}
		if err != nil {
			return nil, err
		}
		if c.Objects[r], err = list[Object](b, r); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// objectsNeeded are the controllers' resources the spec's pools have objects of.
func objectsNeeded(spec topology.StackSpec) []string {
	var out []string
	add := func(r string) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, p := range spec.Pools {
		if p.Provisioner == topology.ProvisionerKarpenter {
			add(ResourceNodePools)
			add(ResourceNodeClasses)
		}
		if p.Benchmark != nil && p.Benchmark.Queue != nil {
			add(ResourceClusterQueues)
		}
		if p.TrainingPod.ComputeDomain != nil {
			add(ResourceComputeDomains)
		}
	}
	return out
}
