package enginetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/experiment"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/gpucluster/gpucluster/test/realengine"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
	"github.com/gpucluster/gpucluster/test/realengine/record"
)

// ExperimentLaunchers are the launcher logs kwok serves for an experiment's benchmark, by stack:
// logs of our own, whose first line names their model (EFA about three times ENA's busbw on
// 4 × g6e.12xlarge, as the field's runs of shared/DESIGN.md have it).
var ExperimentLaunchers = map[string]string{
	"g6e-efa": "cmd/gpucluster/testdata/benchrun/g6e-efa-launcher.log",
	"g6e-ena": "cmd/gpucluster/testdata/benchrun/g6e-ena-launcher.log",
}

// FieldAB is the field's A/B, g6e over EFA against g6e over ENA, as the tier runs it: the stacks,
// and experiment run's arguments (the account's quota said; health skipped, as its checks' logs
// are not served here; a quick poll). A test binary takes one.
var FieldAB = struct {
	Stacks []string
	Args   []string
}{
	Stacks: []string{"g6e-efa", "g6e-ena"},
	Args: []string{"--stacks", "g6e-efa,g6e-ena", "--quota", "Running On-Demand G and VT instances=384", "--no-health",
		"--verify-wait", "4m", "--poll", "500ms"},
}

// CheckDestroyed: the experiment's output says each stack was destroyed.
func (x *Experiment) CheckDestroyed(out string) {
	x.t.Helper()
	for _, d := range x.Stacks {
		if !strings.Contains(out, d.name+": destroyed") {
			x.t.Errorf("%s was not destroyed:\n%s", d.name, out)
		}
	}
}

// Experiment is `gpucluster experiment run` over several stacks in one workspace (one Pulumi
// backend, one aws double record): the CLI brings the stacks up and down itself, through the
// Automation API and the real engine. Each stack's EKS cluster is an API server of its own
// (awsdouble.EnvClusters), where kwok plays the stack's GPU nodes once the aws double has
// created their node groups, as EC2 would launch them.
type Experiment struct {
	t      *testing.T
	Env    *realengine.Env
	Stacks []*Deployment
}

// NewExperiment starts a cluster per stack and the workspace the CLI runs in.
func NewExperiment(t *testing.T, names ...string) *Experiment {
	t.Helper()
	x := &Experiment{t: t}
	clusters := map[string]awsdouble.ClusterAnswer{}
	started := time.Now()
	for _, name := range names {
		spec, err := topology.LoadStack(filepath.Join(ProjectDir, "stacks", "Pulumi."+name+".yaml"), tierDay)
		if err != nil {
			t.Fatal(err)
		}
		server := StartCluster(t, spec)
		ca, err := server.CertificateAuthority()
		if err != nil {
			t.Fatal(err)
		}
		clusters[spec.Cluster.Name] = awsdouble.ClusterAnswer{Endpoint: server.URL, CA: base64.StdEncoding.EncodeToString(ca)}
		x.Stacks = append(x.Stacks, &Deployment{t: t, name: name, spec: spec, server: server, started: started})
	}
	env, err := realengine.NewEnv(t.TempDir(), ProjectDir, NeedTools(t), x.Stacks[0].server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	t.Cleanup(func() { keepRecord(t, "experiment-"+strings.Join(names, "-"), env.Record) })
	raw, _ := json.Marshal(clusters)
	env.SetEnv(awsdouble.EnvClusters, string(raw))
	env.Clock = x.Stacks[0].now
	x.Env = env
	for _, d := range x.Stacks {
		d.Env = env
	}
	return x
}

// Run runs `gpucluster experiment run` with args and, while it runs, joins each stack's GPU nodes
// once its node groups exist and serves its benchmark's logs. It returns the command's output,
// standard error after, and its error.
func (x *Experiment) Run(ctx context.Context, args ...string) (string, error) {
	return x.run(ctx, nil, args...)
}

// RunInterrupted is Run with a Ctrl-C as a terminal sends it, to the command's whole process
// group (the Pulumi CLI and every step among it), once when says so.
func (x *Experiment) RunInterrupted(ctx context.Context, when func() bool, args ...string) (string, error) {
	return x.run(ctx, when, args...)
}

func (x *Experiment) run(ctx context.Context, interruptWhen func() bool, args ...string) (string, error) {
	cmd := x.Env.Command(ctx, "gpucluster", append([]string{"experiment", "run"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a terminal's foreground job
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	joined, serving, interrupted := map[string]bool{}, map[string]bool{}, false
	for {
		select {
		case err := <-done:
			if err != nil {
				err = fmt.Errorf("gpucluster experiment run: %w", err)
			}
			return out.String() + errOut.String(), err
		case <-time.After(time.Second):
		}
		if interruptWhen != nil && !interrupted && interruptWhen() {
			interrupted = true
			x.t.Logf("Ctrl-C to the experiment's process group")
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		}
		for _, d := range x.Stacks {
			if !joined[d.name] {
				if nodes := d.joinNodes(); len(nodes) > 0 {
					joined[d.name] = true
					d.joinGPUNodes(nodes)
				}
			}
			// The launcher's node once the stack is up (its kubeconfig written): cordoning the
			// stand-in's system nodes earlier would put the operators' own pods on kwok.
			if joined[d.name] && !serving[d.name] && x.upDone(d.name) {
				serving[d.name] = true
				d.serveBenchmark(d.fixture(ExperimentLaunchers[d.name]))
			}
		}
	}
}

// UpStarted says whether the experiment started every stack's up (its engine log exists) at
// least since ago, as this test saw it.
func (x *Experiment) UpStarted(since time.Duration) bool {
	for _, d := range x.Stacks {
		files, _ := filepath.Glob(filepath.Join(x.Env.Work, "results", "experiments", "*", d.name, "up.log"))
		if len(files) == 0 || time.Since(firstSeen(files[0])) < since {
			return false
		}
	}
	return true
}

// upDone says whether the experiment has brought the stack up: it writes the stack's kubeconfig then.
func (x *Experiment) upDone(stack string) bool {
	files, _ := filepath.Glob(filepath.Join(x.Env.Work, "results", "experiments", "*", stack, "kubeconfig.json"))
	return len(files) > 0
}

// joinGPUNodes joins the stack's GPU nodes, kwok playing their kubelets, their startup taints
// lifted as their gates do once the node serves.
func (d *Deployment) joinGPUNodes(nodes []joinedNode) {
	d.must(d.server.StartKwokWith(kubeapi.MPIJobKwokOptions))
	for _, n := range nodes {
		d.must(d.server.CreateKwokNode(n.obj))
		d.liftStartupTaints(n, poolSpec(d.spec, n.pool))
	}
}

// serveBenchmark makes the cluster able to run its benchmark: the Job controller, a launcher
// node, and the logs kwok serves as the job's.
func (d *Deployment) serveBenchmark(launcher string) {
	d.must(d.startJobController())
	d.launcherNode()
	d.must(d.server.ServeLogs("experiment", benchjobs.Namespace, map[string]string{
		"launcher": kubeapi.CRILogLines(launcher, time.Now()),
		"worker":   kubeapi.CRILogLines(kubeapi.MPIWorkerLog, time.Now()),
	}))
}

// Logs are the engine's and the steps' logs the experiment wrote, each's last lines: what a
// failed test shows.
func (x *Experiment) Logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(x.Env.Work, "results", "experiments", "*", "*", "*.*"))
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			continue
		}
		data, _ := os.ReadFile(f)
		b.WriteString("== " + f + "\n" + Tail(string(data), 25) + "\n")
	}
	return b.String()
}

// Comparison is the experiment's comparison.json, from the one experiment directory the run wrote.
func (x *Experiment) Comparison() experiment.Comparison {
	x.t.Helper()
	files, _ := filepath.Glob(filepath.Join(x.Env.Work, "results", "experiments", "*", "comparison.json"))
	if len(files) != 1 {
		x.t.Fatalf("%d comparison.json under results/experiments, want 1", len(files))
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		x.t.Fatal(err)
	}
	var c experiment.Comparison
	if err := json.Unmarshal(raw, &c); err != nil {
		x.t.Fatal(err)
	}
	return c
}

// CheckNothingLeft: every stack's state holds no resource, and every AWS resource the double
// created for it was deleted.
func (x *Experiment) CheckNothingLeft(ctx context.Context) {
	x.t.Helper()
	calls, err := x.Env.Calls()
	if err != nil {
		x.t.Fatal(err)
	}
	for _, d := range x.Stacks {
		out, err := x.Env.CLI(ctx, "stack", "export", "-s", d.name)
		if err != nil {
			x.t.Errorf("%s: %v", d.name, err)
			continue
		}
		var state struct {
			Deployment struct {
				Resources []json.RawMessage `json:"resources"`
			} `json:"deployment"`
		}
		if err := json.Unmarshal([]byte(out), &state); err != nil {
			x.t.Errorf("%s: its state: %v", d.name, err)
		} else if n := len(state.Deployment.Resources); n != 0 {
			x.t.Errorf("%s: %d resources left in its state after the experiment", d.name, n)
		}
		if left := leftInRecord(calls, d.name); len(left) > 0 {
			x.t.Errorf("%s: created and never deleted: %s", d.name, strings.Join(left, ", "))
		}
	}
}

// leftInRecord are the URNs of the stack's resources the aws double created and did not delete.
func leftInRecord(calls []record.Call, stack string) []string {
	live := map[string]bool{}
	var order []string
	for _, c := range calls {
		if !strings.HasPrefix(c.URN, "urn:pulumi:"+stack+"::") || c.Error != "" {
			continue
		}
		switch c.Op {
		case "create":
			if !live[c.URN] {
				order = append(order, c.URN)
			}
			live[c.URN] = true
		case "delete":
			live[c.URN] = false
		}
	}
	var left []string
	for _, urn := range order {
		if live[urn] {
			left = append(left, urn)
		}
	}
	return left
}

// ExitCode is a command's exit code from Env.Run's error: 0 when it succeeded.
func ExitCode(err error) int { return exitCode(err) }

// seen is when each file was first looked at (firstSeen).
var seen sync.Map

// firstSeen is when path was first asked about: a file's age as the test saw it.
func firstSeen(path string) time.Time {
	t, _ := seen.LoadOrStore(path, time.Now())
	return t.(time.Time)
}
