package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/efareading"
	"github.com/gpucluster/gpucluster/test/docblocks"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// Walkthrough is a block of the documents that walks from `pulumi up -s <Stack>` to `pulumi
// destroy -s <Stack>` (docblocks.Walkthrough): the tier runs it as written, on the cluster its
// own `pulumi up` of that stack built (checkWalkthroughs).
type Walkthrough struct {
	Doc   string // the document, from the project root
	Stack string
	// Lines are its commands, in order, their comments cut.
	Lines []string
}

// WalkthroughLaunchers are the launcher logs kwok serves for a walkthrough's benchmark, by
// stack: logs of our own, whose first line names their sources.
var WalkthroughLaunchers = map[string]string{
	"g6e-efa": "cmd/gpucluster/testdata/benchrun/g6e-efa-launcher.log",
}

// WalkthroughHealthLogs are the logs kwok serves for `gpucluster health`'s checks in a
// walkthrough, by stack and container: fixtures of our own whose first line names their model.
var WalkthroughHealthLogs = map[string]map[string]string{
	"g6e-efa": {
		benchjobs.DiagContainer:      "internal/health/testdata/dcgm-pass-g6e.log",
		benchjobs.AllReduceContainer: "internal/health/testdata/node-allreduce-g6e.log",
	},
}

// Walkthroughs reads the walkthrough blocks of README.md and docs/*.md under projectDir. A block
// must bring its stack up first (`pulumi up -s <stack>`) and destroy it last (`pulumi destroy
// -s <stack>`): the tier's own up and destroy of the stack are those lines.
func Walkthroughs(projectDir string) ([]Walkthrough, error) {
	docs, err := filepath.Glob(filepath.Join(projectDir, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	var out []Walkthrough
	for _, doc := range append([]string{filepath.Join(projectDir, "README.md")}, docs...) {
		b, err := os.ReadFile(doc)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(projectDir, doc)
		for _, block := range docblocks.Read(string(b)) {
			if block.Info != docblocks.Walkthrough {
				continue
			}
			w := Walkthrough{Doc: rel}
			for _, line := range strings.Split(block.Text, "\n") {
				command, _, _ := strings.Cut(line, " #")
				if command = strings.TrimSpace(command); command != "" && !strings.HasPrefix(command, "#") {
					w.Lines = append(w.Lines, command)
				}
			}
			up, down := -1, -1
			for i, l := range w.Lines {
				words := strings.Fields(l)
				if len(words) == 4 && words[0] == "pulumi" && words[2] == "-s" {
					switch words[1] {
					case "up":
						up, w.Stack = i, words[3]
					case "destroy":
						down = i
					}
				}
			}
			if up < 0 || down != len(w.Lines)-1 || w.Lines[down] != "pulumi destroy -s "+w.Stack {
				return nil, fmt.Errorf("%s: a %q block must run `pulumi up -s <stack>` and end with `pulumi destroy -s <stack>` of the same stack: the tier's up and destroy are those lines", rel, docblocks.Walkthrough)
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// checkWalkthroughs runs, as written, every walkthrough of the documents whose stack this is,
// on the cluster the tier's `pulumi up` built, its GPU nodes joined (checkLiveCluster).
func (d *Deployment) checkWalkthroughs(ctx context.Context) {
	ws, err := Walkthroughs(ProjectDir)
	d.must(err)
	for _, w := range ws {
		if w.Stack == d.name {
			d.runWalkthrough(ctx, w)
		}
	}
}

// runWalkthrough runs a walkthrough's lines in the workspace, as a reader types them at the
// project root: `pulumi up` is the tier's, done before, and `pulumi destroy` the tier's, done
// after; `pulumi stack output … > file` runs and writes the file; each gpucluster command runs
// with the CLI the harness built. Every command must succeed, but `bench run`, which must end
// with the job finished and exit as `bench report` does on the log the launcher wrote. The
// benchmark job runs for real through the stack's own Kueue and MPI operator (their pods run
// by the kubelet stand-in); kwok plays the kubelets of its pods' nodes and serves their logs.
func (d *Deployment) runWalkthrough(ctx context.Context, w Walkthrough) {
	where := fmt.Sprintf("%s: %s's walkthrough", d.name, w.Doc)
	launcher := d.launcherLog(where)
	defer d.launcherNode()()
	d.must(d.startJobController())
	logs := map[string]string{
		"launcher": kubeapi.CRILogLines(launcher, time.Now()),
		"worker":   kubeapi.CRILogLines(kubeapi.MPIWorkerLog, time.Now()),
	}
	for container, file := range WalkthroughHealthLogs[d.name] {
		logs[container] = kubeapi.CRILogLines(d.fixture(file), time.Now())
	}
	d.must(d.server.ServeLogs("walkthrough", benchjobs.Namespace, logs))
	ran := map[string]bool{}
	benchRunExit := -1
	for _, line := range w.Lines {
		words := strings.Fields(line)
		n := len(words)
		switch {
		case line == "pulumi up -s "+w.Stack || line == "pulumi destroy -s "+w.Stack:
			// The tier's own up (done) and destroy (next).
		case words[0] == "pulumi" && n > 2 && words[n-2] == ">":
			out, err := d.Env.CLI(ctx, words[1:n-2]...)
			if err != nil {
				d.t.Fatalf("%s: %q: %v", where, line, err)
			}
			d.must(os.WriteFile(filepath.Join(d.Env.Work, words[n-1]), []byte(out), 0o600))
		case words[0] == "gpucluster" && n > 1:
			out, err := d.Env.Run(ctx, nil, "gpucluster", words[1:]...)
			code := exitCode(err)
			ran[words[1]] = true
			if n > 2 && words[1] == "bench" && words[2] == "run" {
				ran["bench run"] = true
				benchRunExit = code
				d.t.Logf("%s: %q, exit %d:\n%s", where, line, code, out)
				if !strings.Contains(out, "finished: mpijob Succeeded") {
					d.t.Errorf("%s: %q: exit %d, want the job finished: %v\n%s\n%s\n%s", where, line, code, err, out, d.jobState(), d.server.PodLogs())
				}
				continue
			}
			if code != 0 {
				d.t.Errorf("%s: %q: exit %d: %v\n%s", where, line, code, err, out)
			}
		default:
			d.t.Errorf("%s: %q: not a command the tier can run as written (pulumi up, stack output to a file, destroy; gpucluster)", where, line)
		}
	}
	if !ran["plan"] || !ran["verify"] || !ran["health"] || !ran["bench run"] {
		d.t.Errorf("%s: ran gpucluster %v: the walkthrough is the way from plan and up to a verdict (plan, verify, health, bench run)", where, ran)
	}
	d.checkRunResult(ctx, where, launcher, benchRunExit)
	if left := d.jobObjectsLeft(); left != "" {
		d.t.Errorf("%s: after bench run, still in the cluster: %s", where, left)
	}
	d.checkHealthFault(ctx, where)
}

// checkRunResult: bench run left one run's directory, with RESULT.md and the launcher's log as
// kwok served it through `kubectl logs` (every line stamped with its time), RESULT.md judging the
// run by the EFA readings the launcher's log holds, and its exit code is
// the verdict `gpucluster bench report` gives on that log, run on its own: 0 (pass) or 3 (no
// published figure to judge by), never a failure, a usage error or an unreadable log.
func (d *Deployment) checkRunResult(ctx context.Context, where, launcher string, exit int) {
	results, _ := filepath.Glob(filepath.Join(d.Env.Work, "results", d.name, "*", "RESULT.md"))
	if len(results) != 1 {
		d.t.Errorf("%s: the results the walkthrough left: %v, want one run's RESULT.md", where, results)
		return
	}
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(results[0]), "logs", "*-launcher-*.log"))
	if len(logs) != 1 {
		d.t.Errorf("%s: the launcher's logs in the run's directory: %v, want one", where, logs)
		return
	}
	b, err := os.ReadFile(logs[0])
	d.must(err)
	var got []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		_, text, _ := strings.Cut(l, " ") // the time kubectl logs --timestamps puts first
		got = append(got, text)
	}
	if strings.Join(got, "\n") != strings.TrimSuffix(launcher, "\n") {
		d.t.Errorf("%s: the launcher's log collected (%s) is not the log the launcher wrote:\n%s", where, logs[0], b)
	}
	// The launcher's EFA readings reach the verdict: what each node's devices sent during the run.
	if e, _ := efareading.Parse(strings.NewReader(launcher)); e != nil {
		md, err := os.ReadFile(results[0])
		d.must(err)
		if want := fmt.Sprintf("EFA counters: the %d nodes' EFA devices sent", e.Nodes()); !strings.Contains(string(md), want) {
			d.t.Errorf("%s: RESULT.md lacks %q:\n%s", where, want, md)
		}
	}
	_, err = d.Env.Run(ctx, nil, "gpucluster", "bench", "report", "--log", logs[0], "--stack", d.name)
	if want := exitCode(err); exit != want || (want != 0 && want != 3) {
		d.t.Errorf("%s: bench run exit %d; bench report on the launcher's log: exit %d (%v), want 0 or 3 from both", where, exit, want, err)
	}
}

// fixture is a file of the project without its provenance line.
func (d *Deployment) fixture(file string) string {
	b, err := os.ReadFile(filepath.Join(ProjectDir, file))
	d.must(err)
	_, log, _ := strings.Cut(string(b), "\n")
	return log
}

// launcherLog is the log kwok serves as the walkthrough's launcher's, its provenance line cut.
func (d *Deployment) launcherLog(where string) string {
	file, ok := WalkthroughLaunchers[d.name]
	if !ok {
		d.t.Fatalf("%s: no launcher log for stack %s in enginetest.WalkthroughLaunchers", where, d.name)
	}
	return d.fixture(file)
}

// exitCode is a command's exit code: 0 when it succeeded, -1 when it did not run.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// startJobController starts Kubernetes' Job controller, which EKS runs from the start: here
// it starts with the first Job, the benchmark's launcher (nothing the stacks deploy makes a
// Job; the expiry's CronJob has no controller in the harness).
func (d *Deployment) startJobController() error {
	if d.jobController {
		return nil
	}
	d.jobController = true
	return d.server.StartJobController()
}

// launcherNode joins one more system node, whose kubelet kwok plays, and cordons the system
// nodes the kubelet stand-in plays while the walkthrough runs, so that the launcher (whose
// node selector is the system pool) lands there: the stand-in runs the operators' pods, and
// would keep a Job's pod running forever with no log to serve. It returns what undoes both.
func (d *Deployment) launcherNode() (undo func()) {
	nodes, err := d.server.List(map[string]any{"apiVersion": "v1", "kind": "Node"})
	d.must(err)
	var cordoned []map[string]any
	for _, n := range nodes {
		md := asMap(n["metadata"])
		if asMap(md["labels"])[topology.LabelPool] != topology.SystemPool || asMap(md["annotations"])[kubeapi.KwokNodeAnnotation] != nil {
			continue
		}
		n["apiVersion"], n["kind"] = "v1", "Node" // a list's items have neither
		d.must(d.server.Modify(n, func(now map[string]any) { asMap(now["spec"])["unschedulable"] = true }))
		cordoned = append(cordoned, n)
	}
	node := kubeapi.KwokNode(d.name+"-system-kwok", systemNodeLabels(d.spec, 0), nil, kubeapi.SystemNodeAllocatable)
	d.must(d.server.CreateKwokNode(node))
	return func() {
		d.server.Delete(node)
		for _, n := range cordoned {
			d.must(d.server.Modify(n, func(now map[string]any) { delete(asMap(now["spec"]), "unschedulable") }))
		}
	}
}

// jobObjectsLeft is what of a benchmark job is still in its namespace a minute on (the garbage
// collector deletes what the job made): jobs, pods, Workloads.
func (d *Deployment) jobObjectsLeft() string {
	deadline := time.Now().Add(time.Minute)
	for {
		left, err := d.server.Names(benchjobs.Namespace, benchjobs.MPIJobObjects...)
		d.must(err)
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, " ")
		}
		time.Sleep(time.Second)
	}
}

// jobState is what a failed run leaves to read: the job's Workloads (Kueue's conditions), its
// pods (node, phase, scheduling gates, conditions) and the nodes (labels, taints, schedulable).
func (d *Deployment) jobState() string {
	var b strings.Builder
	for _, kind := range []map[string]any{
		{"apiVersion": topology.KueueAPIVersion, "kind": "Workload", "metadata": map[string]any{"namespace": benchjobs.Namespace}},
		{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"namespace": benchjobs.Namespace}},
		{"apiVersion": "v1", "kind": "Node"},
	} {
		objs, err := d.server.List(kind)
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", kind["kind"], err)
			continue
		}
		for _, o := range objs {
			md := asMap(o["metadata"])
			delete(md, "managedFields")
			if kind["kind"] == "Node" {
				fmt.Fprintf(&b, "--- Node %v: labels %v, annotations %v, spec %v\n", md["name"], md["labels"], md["annotations"], o["spec"])
				continue
			}
			fmt.Fprintf(&b, "--- %s %v: spec %v\nstatus %v\n", kind["kind"], md["name"], o["spec"], o["status"])
		}
	}
	return b.String()
}
