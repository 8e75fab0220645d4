package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// Options are one run's.
type Options struct {
	Kubectl verify.Kubectl
	Stack   topology.StackSpec // at the time of the run (AtTime)
	Pool    topology.PoolSpec
	Job     string // JobNCCL or JobTrain
	// Dir is the run's directory, which must not exist yet: every log goes under it.
	Dir     string
	Timeout time.Duration // from the job's creation to its end
	Poll    time.Duration // how often the job is looked at
	Now     func() time.Time
	Out     io.Writer // progress, one line per change
}

// Outcome is how a run ended and what it left in its directory.
type Outcome struct {
	Job       string // "mpijob/gpu-nccl-allreduce"
	Finished  string // the ending condition (Succeeded, Complete, Failed), "" if it did not end
	Ended     string // why it stopped: "finished", "timed out", "interrupted"
	Elapsed   time.Duration
	OutputLog string   // the run's output (the launcher's, rank 0's), relative to Dir; "" if none
	Logs      []string // every pod's log, relative to Dir
	Pods      string   // the job's pods as last seen, kubectl's JSON List, relative to Dir
	Nodes     string   // the nodes they ran on, likewise
	Deleted   bool     // the job was deleted at the end
}

// Files in a run's directory.
const (
	JobFile   = "job.json"  // the object created, as created
	PodsFile  = "pods.json" // the pods of the job's ranks, as last seen
	NodesFile = "nodes.json"
	LogsDir   = "logs" // logs/<pod>.log, every container's

	// Written by bench run once the job is over: the report, its rows and chart, and the
	// doctor's reading of every pod's log.
	ResultMarkdown = "RESULT.md"
	ResultJSON     = "result.json"
	ResultSVG      = "busbw.svg"
	DoctorFile     = "doctor.txt"
)

// ErrExists is a job of the same name already in the cluster: a run under way, or one left. It
// is not gpucluster's to delete.
var ErrExists = errors.New("already exists")

// Run creates the pool's job and follows it to its end, the timeout, or ctx's cancellation
// (Ctrl-C); whichever it is, it collects the logs it can and deletes the job it created. The
// error is for what kept it from running at all, or from cleaning up.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	j, err := jobOf(o.Stack, o.Pool, o.Job)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(o.Dir), 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("the run's directory: %w (each run writes a new one)", err)
	}
	if err := os.Mkdir(filepath.Join(o.Dir, LogsDir), 0o755); err != nil {
		return nil, err
	}
	body, _ := json.MarshalIndent(j.obj, "", "  ")
	if err := os.WriteFile(filepath.Join(o.Dir, JobFile), append(body, '\n'), 0o644); err != nil {
		return nil, err
	}
	r := &runner{o: o, j: j, out: &Outcome{Job: j.kind + "/" + j.name}, followed: map[string]bool{}, seen: map[string]map[string]any{}}
	r.followCtx, r.stopFollowing = context.WithCancel(ctx)
	defer r.stopFollowing()
	if err := r.create(ctx); err != nil {
		os.RemoveAll(o.Dir) // this run's own, and it never ran
		return nil, err
	}
	start := o.Now()
	r.printf(0, "created %s in namespace %s (%s)", r.out.Job, j.namespace, JobFile)
	watchCtx, stopWatch := context.WithCancel(ctx)
	go r.watchPods(watchCtx)
	r.follow(ctx, start)
	stopWatch()
	r.out.Elapsed = o.Now().Sub(start)
	// What follows must happen whatever became of ctx: the logs, then the deletion.
	bg := context.WithoutCancel(ctx)
	r.collect(bg)
	r.out.Deleted = r.delete(bg)
	if !r.out.Deleted {
		return r.out, fmt.Errorf("%s could not be deleted: delete it yourself (kubectl -n %s delete %s)", r.out.Job, j.namespace, r.out.Job)
	}
	r.printf(r.out.Elapsed, "deleted %s; logs in %s", r.out.Job, o.Dir)
	return r.out, nil
}

type runner struct {
	o   Options
	j   *job
	out *Outcome

	mu        sync.Mutex
	followed  map[string]bool
	followers sync.WaitGroup
	// followCtx bounds the log followers: collect stops them before it reads the logs again.
	followCtx     context.Context
	stopFollowing context.CancelFunc
	seen          map[string]map[string]any // every pod of the job, as last seen
}

func (r *runner) printf(at time.Duration, format string, args ...any) {
	fmt.Fprintf(r.o.Out, "%5s  %s\n", clock(at), fmt.Sprintf(format, args...))
}

// clock is an elapsed time as m:ss (h:mm:ss past an hour).
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// kubectl runs kubectl and returns its standard output; its error carries kubectl's message.
func (r *runner) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return r.o.Kubectl.Run(ctx, stdin, args...)
}

// create creates the job; one of that name already there is refused, never replaced.
func (r *runner) create(ctx context.Context) error {
	body, _ := json.Marshal(r.j.obj)
	if _, err := r.kubectl(ctx, body, "create", "-f", "-"); err != nil {
		if strings.Contains(err.Error(), "AlreadyExists") || strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("%s %s in namespace %s: %w: a run is under way or was left there; gpucluster deletes only what it created (kubectl -n %s delete %s/%s, if it is yours)",
				r.j.kind, r.j.name, r.j.namespace, ErrExists, r.j.namespace, r.j.kind, r.j.name)
		}
		return err
	}
	return nil
}

// follow looks at the job every Poll until it ends, the timeout passes or ctx is cancelled,
// saying each change of state once.
func (r *runner) follow(ctx context.Context, start time.Time) {
	last := ""
	for {
		elapsed := r.o.Now().Sub(start)
		state, err := r.look(ctx, elapsed)
		switch {
		case ctx.Err() != nil:
			r.out.Ended = "interrupted"
			r.printf(elapsed, "interrupted: deleting %s, keeping the logs collected so far", r.out.Job)
			return
		case err != nil && strings.Contains(err.Error(), "NotFound"):
			r.out.Ended = "deleted by someone else"
			r.printf(elapsed, "%s was deleted outside bench run: keeping the logs collected so far", r.out.Job)
			return
		case err != nil:
			if err.Error() != last {
				r.printf(elapsed, "could not read the job (trying again): %v", err)
				last = err.Error()
			}
		case state != last:
			r.printf(elapsed, "%s", state)
			last = state
		}
		if r.out.Finished != "" {
			r.out.Ended = "finished"
			return
		}
		if elapsed >= r.o.Timeout {
			r.out.Ended = "timed out"
			r.printf(elapsed, "timed out after %s: deleting %s, keeping the logs collected so far", r.o.Timeout, r.out.Job)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.o.Poll):
		}
	}
}

// look reads the job and its pods once: the state to show, and every pod seen running has its
// log followed from then on (a finished MPIJob's workers are deleted at once).
func (r *runner) look(ctx context.Context, elapsed time.Duration) (string, error) {
	raw, err := r.kubectl(ctx, nil, "-n", r.j.namespace, "get", r.j.kind, r.j.name, "-o", "json")
	if err != nil {
		return "", err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", err
	}
	raw, err = r.kubectl(ctx, nil, "-n", r.j.namespace, "get", "pods", "-l", r.j.pods, "-o", "json")
	if err != nil {
		return "", err
	}
	var pods struct{ Items []map[string]any }
	if err := json.Unmarshal(raw, &pods); err != nil {
		return "", err
	}
	for _, c := range list(dig(obj, "status", "conditions")) {
		cond, _ := c.(map[string]any)
		if cond["status"] == "True" && (cond["type"] == r.j.success || cond["type"] == r.j.failure) {
			r.out.Finished = cond["type"].(string)
			return fmt.Sprintf("finished: %s %s", r.j.kind, cond["type"]), nil
		}
	}
	var running, pending []string
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		name := str(dig(p, "metadata", "name"))
		r.saw(p)
		switch phase := str(dig(p, "status", "phase")); phase {
		case "Running", "Succeeded", "Failed":
			running = append(running, name)
			nodes[str(dig(p, "spec", "nodeName"))] = true
		default:
			pending = append(pending, name)
		}
	}
	if suspended, _ := dig(obj, r.j.suspend...).(bool); suspended {
		return "queued: Kueue holds the job (suspended, no pod) until queue " + r.o.Pool.Name + " can admit all of it", nil
	}
	if len(running) == 0 {
		return fmt.Sprintf("admitted: %d pods starting", len(pending)), nil
	}
	names := slices.Sorted(maps.Keys(nodes))
	state := fmt.Sprintf("running: %d pods on %s", len(running), strings.Join(names, ", "))
	if len(pending) > 0 {
		state += fmt.Sprintf("; %d starting", len(pending))
	}
	return state, nil
}

// watchPods follows every pod of the job as the API server reports it, so that each pod's log is
// followed from the moment it runs: a finished MPIJob's workers are deleted at once, sooner than
// a poll may see them.
func (r *runner) watchPods(ctx context.Context) {
	for ctx.Err() == nil {
		cmd := r.o.Kubectl.Command(ctx, "-n", r.j.namespace, "get", "pods", "-l", r.j.pods, "--watch", "-o", "json")
		stdout, err := cmd.StdoutPipe()
		if err != nil || cmd.Start() != nil {
			return
		}
		dec := json.NewDecoder(stdout)
		for {
			var pod map[string]any
			if err := dec.Decode(&pod); err != nil {
				break
			}
			r.saw(pod)
		}
		cmd.Wait()
		select { // a watch the API server ended: start another
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// saw records a pod as last seen, and follows its log once it runs.
func (r *runner) saw(pod map[string]any) {
	name := str(dig(pod, "metadata", "name"))
	r.mu.Lock()
	r.seen[name] = pod
	r.mu.Unlock()
	switch str(dig(pod, "status", "phase")) {
	case "Running", "Succeeded", "Failed":
		r.followLog(name)
	}
}

// followLog streams a pod's log, every container's, into logs/<pod>.log until the pod ends.
func (r *runner) followLog(pod string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.followed[pod] {
		return
	}
	r.followed[pod] = true
	r.followers.Add(1)
	go func() {
		defer r.followers.Done()
		f, err := os.Create(filepath.Join(r.o.Dir, LogsDir, pod+".log"))
		if err != nil {
			return
		}
		defer f.Close()
		cmd := r.o.Kubectl.Command(r.followCtx, "-n", r.j.namespace, "logs", "-f", "--all-containers", "--timestamps", pod)
		cmd.Stdout = f
		cmd.Run() // ends with the pod, or is read again whole in collect
	}()
}

// collect waits a little for the followers, then reads again, whole, the log of every pod still
// there (a follower cut short by the end of the run or Ctrl-C leaves it partial), and records
// the pods and their nodes for bench report's --pods.
func (r *runner) collect(ctx context.Context) {
	done := make(chan struct{})
	go func() { r.followers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // pods still running (a timeout): their logs are read whole below
		r.stopFollowing()
		<-done
	}
	// The watch may still be reporting a pod while it stops: read its records under the lock.
	r.mu.Lock()
	pods := slices.Sorted(maps.Keys(r.seen))
	followed, seen := maps.Clone(r.followed), maps.Clone(r.seen)
	r.mu.Unlock()
	for _, pod := range pods {
		if !followed[pod] {
			continue
		}
		if log, err := r.kubectl(ctx, nil, "-n", r.j.namespace, "logs", "--all-containers", "--timestamps", pod); err == nil && len(log) > 0 {
			os.WriteFile(filepath.Join(r.o.Dir, LogsDir, pod+".log"), log, 0o644)
		}
		r.out.Logs = append(r.out.Logs, filepath.Join(LogsDir, pod+".log"))
	}
	if raw, err := r.kubectl(ctx, nil, "-n", r.j.namespace, "get", "pods", "-l", r.j.output, "-o", "jsonpath={.items[*].metadata.name}"); err == nil {
		for _, name := range strings.Fields(string(raw)) {
			if followed[name] {
				r.out.OutputLog = filepath.Join(LogsDir, name+".log")
			}
		}
	}
	if r.out.OutputLog == "" { // the output pod is gone: find it among those seen
		for _, pod := range pods {
			if followed[pod] && matches(seen[pod], r.j.output) {
				r.out.OutputLog = filepath.Join(LogsDir, pod+".log")
			}
		}
	}
	// The ranks' pods that were placed, and their nodes: what the run spanned.
	var items []any
	nodes := map[string]bool{}
	for _, pod := range pods {
		if node := str(dig(seen[pod], "spec", "nodeName")); node != "" && matches(seen[pod], r.j.ranks) {
			items = append(items, seen[pod])
			nodes[node] = true
		}
	}
	if len(items) > 0 {
		writeList(filepath.Join(r.o.Dir, PodsFile), items)
		r.out.Pods = PodsFile
	}
	if len(nodes) > 0 {
		names := slices.Sorted(maps.Keys(nodes))
		if raw, err := r.kubectl(ctx, nil, append([]string{"get", "nodes", "-o", "json"}, names...)...); err == nil {
			os.WriteFile(filepath.Join(r.o.Dir, NodesFile), raw, 0o644)
			r.out.Nodes = NodesFile
		}
	}
}

// delete deletes the job it created, and waits until it is gone (its pods with it, by the
// garbage collector): the run leaves nothing applied.
func (r *runner) delete(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := r.kubectl(ctx, nil, "-n", r.j.namespace, "delete", r.j.kind, r.j.name, "--ignore-not-found", "--wait=true", "--timeout=90s")
	if err != nil {
		r.printf(r.out.Elapsed, "deleting %s: %v", r.out.Job, err)
		return false
	}
	return true
}

// matches says whether a pod carries every label of a selector "k=v,k=v".
func matches(pod map[string]any, selector string) bool {
	labels, _ := dig(pod, "metadata", "labels").(map[string]any)
	for _, kv := range strings.Split(selector, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if labels[k] != v {
			return false
		}
	}
	return true
}

func writeList(file string, items []any) {
	b, _ := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	os.WriteFile(file, append(b, '\n'), 0o644)
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func list(v any) []any { l, _ := v.([]any); return l }
func str(v any) string { s, _ := v.(string); return s }
