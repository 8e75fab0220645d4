package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/verify"
)

func TestVerifyCodesAreDocumented(t *testing.T) {
	if !strings.Contains(docText(t, "docs/cli.md"), verifyCodeMarkdown()) {
		t.Errorf("docs/cli.md's verify codes are not verify's own; the table should read:\n%s", verifyCodeMarkdown())
	}
}

func TestVerifyJSONIsDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, m := range firstCell.FindAllStringSubmatch(section(t, docText(t, "docs/json.md"), "Verify JSON"), -1) {
		for _, p := range expandBraces(m[1]) {
			documented[p] = true
		}
	}
	actual := map[string]bool{}
	for _, f := range jsonFields(verify.Report{}) {
		actual[f.path] = true
	}
	compareSets(t, "verify JSON field", actual, documented)
}

// A cluster kubectl cannot reach is said, with nothing checked: exit 4, not a verdict.
func TestVerifyUnreachableClusterIsNotAVerdict(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// A cluster at a port nothing listens on (port 1 on loopback refuses at once).
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code := run([]string{"verify", "--stack", "p5-efa", "--kubeconfig", kubeconfig}, &out, &errOut)
	if code != exitUnreadable || !strings.Contains(errOut.String(), "nothing was checked") || !strings.Contains(errOut.String(), "127.0.0.1:1") || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestVerifyUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify"}, "--stack NAME or --config FILE"},
		{[]string{"verify", "p5-efa"}, "gpucluster verify --stack p5-efa"},
		{[]string{"verify", "--stack", "p5-eaf"}, `did you mean "p5-efa"`},
		{[]string{"verify", "--stack", "p5-efa", "--config", "x.yaml"}, "--stack NAME or --config FILE"},
	} {
		var out, errOut strings.Builder
		if code := run(tc.args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestVerifyWaitReadsAgainUntilTheClusterMatches: --wait reads again, past a read that fails
// and a cluster that differs, until it matches; and gives up when the time is up, with the
// last error.
func TestVerifyWaitReadsAgainUntilTheClusterMatches(t *testing.T) {
	clock := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	defer func(n func() time.Time, s func(time.Duration)) { now, sleep = n, s }(now, sleep)
	now = func() time.Time { return clock }
	sleep = func(d time.Duration) { clock = clock.Add(d) }
	spec := topology.StackSpec{Stack: "x"}

	reads := []func() (*verify.Cluster, error){
		func() (*verify.Cluster, error) { return nil, errors.New("connection refused") },
		func() (*verify.Cluster, error) {
			return &verify.Cluster{Unserved: []string{verify.ResourceClusterQueues}}, nil
		},
		func() (*verify.Cluster, error) { return &verify.Cluster{}, nil },
	}
	calls := 0
	read := func(context.Context) (*verify.Cluster, error) { calls++; return reads[min(calls, len(reads))-1]() }
	var said strings.Builder
	r, err := verifyUntil(spec, read, time.Minute, &said)
	if err != nil || r.Errors != 0 || calls != 3 {
		t.Errorf("after %d reads: %+v, %v", calls, r, err)
	}
	if !strings.Contains(said.String(), "cannot read the cluster yet (connection refused)") || !strings.Contains(said.String(), "1 error(s) (not-installed)") {
		t.Errorf("what it waited for was not said:\n%s", said.String())
	}

	calls = 0
	start := clock
	_, err = verifyUntil(spec, func(context.Context) (*verify.Cluster, error) { calls++; return nil, errors.New("refused") }, 30*time.Second, io.Discard)
	if err == nil || calls != 4 || clock.Sub(start) != 30*time.Second {
		t.Errorf("waiting 30 s on a cluster that never answers: %d reads over %s, error %v", calls, clock.Sub(start), err)
	}

	calls = 0
	if _, err = verifyUntil(spec, func(context.Context) (*verify.Cluster, error) { calls++; return nil, errors.New("refused") }, 0, io.Discard); err == nil || calls != 1 {
		t.Errorf("without --wait: %d reads, error %v", calls, err)
	}
}
