package health

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// create creates an object; one of that name already there is refused, never replaced.
func (r *runner) create(ctx context.Context, obj map[string]any) error {
	body, _ := json.Marshal(obj)
	_, err := r.c.kubectl(ctx, body, "create", "-f", "-")
	return err
}

// jobState is how a job ended: its finishing condition ("Complete", "Failed", "Succeeded"), or
// "" when it had not ended.
type jobState struct {
	Ended  string
	Reason string // the condition's reason and message (DeadlineExceeded, BackoffLimitExceeded)
}

// wait looks at the run's jobs of one check every Poll until all have ended, the bound passes,
// or ctx is cancelled; it says each change of the count.
func (r *runner) wait(ctx context.Context, kind, check string, count int, bound time.Duration) map[string]jobState {
	ended := map[string]jobState{}
	deadline := r.o.Now().Add(bound)
	sel := topology.LabelHealthRun + "=" + r.o.Run + "," + topology.LabelHealthCheck + "=" + check
	last := ""
	for ctx.Err() == nil && r.o.Now().Before(deadline) {
		var list struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Status struct {
					Conditions []struct {
						Type, Status, Reason, Message string
					} `json:"conditions"`
				} `json:"status"`
			} `json:"items"`
		}
		if err := r.c.list(ctx, &list, kind, "-n", benchjobs.Namespace, "-l", sel); err == nil {
			for _, j := range list.Items {
				for _, c := range j.Status.Conditions {
					if c.Status == "True" && slices.Contains([]string{"Complete", "Failed", "Succeeded"}, c.Type) {
						ended[j.Metadata.Name] = jobState{Ended: c.Type, Reason: strings.TrimSpace(c.Reason + ": " + c.Message)}
					}
				}
			}
		}
		if now := fmt.Sprintf("%s: %d of %d ended", check, len(ended), count); now != last {
			if len(ended) > 0 {
				r.printf("%s", now)
			}
			last = now
		}
		if len(ended) >= count {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.o.Poll):
		}
	}
	return ended
}

// jobLog is the log of a check job's pod (the last one, were there several) and how it ended;
// a job that did not end says why its pod did not run, when it did not.
func (r *runner) jobLog(ctx context.Context, job string, state jobState) (string, jobState) {
	return r.podLog(ctx, "batch.kubernetes.io/job-name="+job, state)
}

// checkPod is what health reads of a check's pod: when it was made, and why it did not run.
type checkPod struct {
	Metadata struct {
		Name              string    `json:"name"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
		ContainerStatuses []struct {
			State struct {
				Waiting *struct{ Reason, Message string } `json:"waiting"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// podLog reads the log of the newest pod a selector picks.
func (r *runner) podLog(ctx context.Context, selector string, state jobState) (string, jobState) {
	var pods struct{ Items []checkPod }
	if err := r.c.list(ctx, &pods, "pods", "-n", benchjobs.Namespace, "-l", selector); err != nil || len(pods.Items) == 0 {
		if state.Ended == "" {
			state.Reason = "no pod was started for it"
		}
		return "", state
	}
	slices.SortFunc(pods.Items, func(a, b checkPod) int { return a.Metadata.CreationTimestamp.Compare(b.Metadata.CreationTimestamp) })
	p := pods.Items[len(pods.Items)-1]
	if state.Ended == "" {
		switch {
		case p.Status.Phase == "Pending":
			state.Reason = "its pod is still Pending"
			for _, c := range p.Status.Conditions {
				if c.Type == "PodScheduled" && c.Status == "False" {
					state.Reason += ": " + c.Message
				}
			}
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil {
					state.Reason += ": " + w.Reason + " " + w.Message
				}
			}
		default:
			state.Reason = "its pod is still " + p.Status.Phase
		}
	}
	raw, _ := r.c.kubectl(ctx, nil, "logs", "-n", benchjobs.Namespace, p.Metadata.Name, "--all-containers")
	return string(raw), state
}

// pairChecks runs the pair all-reduce on every EFA pool's nodes still passing, round by round,
// and isolates a failed pair's culprit against a node that passed.
func (r *runner) pairChecks(ctx context.Context) {
	for _, g := range byPool(r.passing()) {
		pool, nodes := g.pool, g.nodes
		if pool.Network.EFAInterfaces == 0 {
			continue
		}
		if why := r.pairUnavailable(pool, len(nodes)); why != "" {
			for _, n := range nodes {
				r.record(n, Check{Name: topology.HealthCheckPairAllReduce, Status: NotRun, Evidence: why})
			}
			continue
		}
		outcomes := map[string][]pairOutcome{}
		for _, round := range Pairs(nodes) {
			r.pairRound(ctx, pool, round, outcomes)
		}
		r.isolate(ctx, pool, outcomes)
		for _, n := range nodes {
			r.record(n, pairVerdict(outcomes[n]))
		}
	}
}

// pairUnavailable says why a pool's pairs cannot be checked ("" when they can).
func (r *runner) pairUnavailable(p topology.PoolSpec, nodes int) string {
	switch {
	case nodes < 2:
		return "one node of the pool is free to check: a pair needs two"
	case p.Benchmark == nil:
		return "the pair check runs the pool's all-reduce MPIJob, which comes with gpucluster:benchmarks (the MPI operator)"
	case !r.pairOK:
		return "the cluster serves no MPIJob: the MPI operator is not installed"
	}
	return ""
}

// pairOutcome is one pair run as one of its nodes sees it.
type pairOutcome struct {
	With  string
	Check Check
}

// pairRound runs a round's pairs at once.
func (r *runner) pairRound(ctx context.Context, pool topology.PoolSpec, round [][2]string, outcomes map[string][]pairOutcome) {
	if ctx.Err() != nil {
		return
	}
	check := topology.HealthCheckPairAllReduce
	jobs := map[string][2]string{}
	for _, pair := range round {
		name := jobName("pair", r.o.Run, pair[:]...)
		obj, err := benchjobs.PairJob(r.o.Stack, pool, name, pair, r.o.Run)
		if err == nil {
			err = r.create(ctx, obj)
		}
		if err != nil {
			c := Check{Name: check, Status: Unknown, Evidence: fmt.Sprintf("could not create the pair's MPIJob: %v", err)}
			outcomes[pair[0]] = append(outcomes[pair[0]], pairOutcome{pair[1], c})
			outcomes[pair[1]] = append(outcomes[pair[1]], pairOutcome{pair[0], c})
			continue
		}
		jobs[name] = pair
	}
	r.printf("%s: started on %s", check, strings.Join(mapPairs(jobs), ", "))
	ended := r.wait(ctx, mpiJobs, check, len(jobs), r.maxDeadline(check, []Target{{Pool: pool}}))
	for name, pair := range jobs {
		log, state := r.podLog(context.WithoutCancel(ctx), "training.kubeflow.org/job-name="+name+",training.kubeflow.org/job-role=launcher", ended[name])
		r.keepLog(name, log)
		c := judgePair(pool, state, log)
		r.printf("%s: %s %s: %s", pairName(pair), check, c.Status, c.Evidence)
		outcomes[pair[0]] = append(outcomes[pair[0]], pairOutcome{pair[1], c})
		outcomes[pair[1]] = append(outcomes[pair[1]], pairOutcome{pair[0], c})
	}
	// Each pair's MPIJob goes before the next round, whose pairs reuse its nodes.
	sel := topology.LabelHealthRun + "=" + r.o.Run + "," + topology.LabelHealthCheck + "=" + check
	r.c.kubectl(context.WithoutCancel(ctx), nil, "delete", mpiJobs, "-n", benchjobs.Namespace, "-l", sel, "--wait=true", "--timeout=90s", "--cascade=foreground")
}

func mapPairs(jobs map[string][2]string) []string {
	var out []string
	for _, name := range topology.SortedKeys(jobs) {
		out = append(out, pairName(jobs[name]))
	}
	return out
}

// isolate runs each node of a failed pair with a node that passed a pair: the pair that fails
// again names the node at fault. Without a node that passed, both stay failed.
func (r *runner) isolate(ctx context.Context, pool topology.PoolSpec, outcomes map[string][]pairOutcome) {
	good := ""
	for _, n := range topology.SortedKeys(outcomes) {
		if slices.ContainsFunc(outcomes[n], func(o pairOutcome) bool { return o.Check.Status == Pass }) {
			good = n
			break
		}
	}
	if good == "" {
		return
	}
	for _, n := range topology.SortedKeys(outcomes) {
		o := outcomes[n]
		if n == good || len(o) == 0 || o[len(o)-1].Check.Status != Fail || o[len(o)-1].With == good {
			continue
		}
		r.pairRound(ctx, pool, [][2]string{{n, good}}, outcomes)
	}
}

// pairVerdict is a node's pair check from the pairs it ran in: the last pair decides (an
// isolating pair runs after the one it isolates); a failed pair with no isolation blames both.
func pairVerdict(outcomes []pairOutcome) Check {
	if len(outcomes) == 0 {
		return Check{Name: topology.HealthCheckPairAllReduce, Status: Unknown, Evidence: "no pair ran"}
	}
	last := outcomes[len(outcomes)-1]
	c := last.Check
	c.Evidence = "with " + last.With + ": " + c.Evidence
	if c.Status == Fail && len(outcomes) == 1 {
		c.Evidence += " (no node that passed a pair was free to tell which of the two is at fault)"
	}
	return c
}

// describe says what the run would do (--dry-run).
func (r *runner) describe(targets []Target) {
	for _, g := range byPool(targets) {
		p, nodes, name := g.pool, g.nodes, g.pool.Name
		fmt.Fprintf(r.o.Out, "pool %s (%s): %d node(s) to check: %s\n", name, p.Instance.Name, len(nodes), strings.Join(nodes, ", "))
		fmt.Fprintf(r.o.Out, "  each taken out of service meanwhile (%s=%s:%s), given back unless it fails\n", topology.HealthTaint.Key, topology.HealthTaint.Value, topology.HealthTaint.Effect)
		fmt.Fprintf(r.o.Out, "  1. %s: %s: %s\n", topology.HealthCheckDiag, topology.DCGMImage, strings.Join(topology.DiagCommand(p, r.o.Level), " "))
		floor, why := topology.NodeBusBWFloor(p)
		judged := "busbw reported"
		if floor > 0 {
			judged = fmt.Sprintf("busbw at least %.0f GB/s (%s)", floor, why)
		}
		fmt.Fprintf(r.o.Out, "  2. %s: %s: %s; %s\n", topology.HealthCheckNodeAllReduce, r.o.Stack.TrainingImage, strings.Join(topology.NodeAllReduceCommand(p), " "), judged)
		if p.Network.EFAInterfaces == 0 {
			continue
		}
		if why := r.pairUnavailable(p, len(nodes)); why != "" {
			fmt.Fprintf(r.o.Out, "  3. %s: not run: %s\n", topology.HealthCheckPairAllReduce, why)
			continue
		}
		floor, why = topology.PairBusBWFloor(p)
		for i, round := range Pairs(nodes) {
			var names []string
			for _, pair := range round {
				names = append(names, pairName(pair))
			}
			fmt.Fprintf(r.o.Out, "  3. %s, round %d: %s; busbw at least %.0f GB/s (%s)\n", topology.HealthCheckPairAllReduce, i+1, strings.Join(names, ", "), floor, why)
		}
	}
}

// poolNodes are a pool's targets.
type poolNodes struct {
	pool  topology.PoolSpec
	nodes []string
}

// byPool groups targets by pool, pools by name.
func byPool(targets []Target) []poolNodes {
	m := map[string]*poolNodes{}
	for _, t := range targets {
		if m[t.Pool.Name] == nil {
			m[t.Pool.Name] = &poolNodes{pool: t.Pool}
		}
		m[t.Pool.Name].nodes = append(m[t.Pool.Name].nodes, t.Node)
	}
	var out []poolNodes
	for _, name := range topology.SortedKeys(m) {
		out = append(out, *m[name])
	}
	return out
}
