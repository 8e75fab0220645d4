package benchjobs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// TestP5AllReduceIsShapedToSchedule holds the p5-efa stack's all-reduce MPIJob to what placing it
// needs, written out here: two workers, each taking a whole p5.48xlarge (8 GPUs and 32 EFA
// devices: EC2 user guide, "Accelerated computing instances" and "Maximize network bandwidth on
// accelerated instances": 32 network cards, one EFA each) on the pool's nodes, tolerating their
// GPU taint, in the pool's Kueue queue and packed under one layer-3 network node; the launcher on
// a system node with no GPU; mpirun starting one rank per GPU. A wrong figure here leaves the
// job unscheduled, which infra/program's scheduling test only finds by waiting.
func TestP5AllReduceIsShapedToSchedule(t *testing.T) {
	stack, err := topology.LoadStack("../../stacks/Pulumi.p5-efa.yaml", testDay)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(stack, stack.Pools[0])
	if err != nil || len(objs) == 0 {
		t.Fatalf("objects %v, %v", objs, err)
	}
	job := objs[0]
	at := func(path ...string) any {
		var v any = job
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		return v
	}
	if job["kind"] != "MPIJob" || at("metadata", "labels", "kueue.x-k8s.io/queue-name") != "gpu" {
		t.Errorf("%v %v is not in the pool's queue", job["kind"], at("metadata"))
	}
	worker := []string{"spec", "mpiReplicaSpecs", "Worker"}
	if n := at(append(worker, "replicas")...); n != float64(2) {
		t.Errorf("%v workers, want 2 (the stack's two nodes)", n)
	}
	podSpec := append(worker, "template", "spec")
	limits := at(podSpec...).(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["limits"].(map[string]any)
	if limits["nvidia.com/gpu"] != "8" || limits["vpc.amazonaws.com/efa"] != "32" {
		t.Errorf("a worker takes %v GPUs and %v EFA devices, want a whole p5.48xlarge: 8 and 32", limits["nvidia.com/gpu"], limits["vpc.amazonaws.com/efa"])
	}
	if sel := at(append(podSpec, "nodeSelector")...); !reflect.DeepEqual(sel, map[string]any{"gpucluster.io/pool": "gpu"}) {
		t.Errorf("workers select %v, want the pool's nodes", sel)
	}
	wantTolerations := []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}
	if tol := at(append(podSpec, "tolerations")...); !reflect.DeepEqual(tol, wantTolerations) {
		t.Errorf("workers tolerate %v, want the GPU taint %v", tol, wantTolerations)
	}
	if a := at(append(worker, "template", "metadata", "annotations")...); !reflect.DeepEqual(a, map[string]any{
		"kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"}) {
		t.Errorf("worker annotations %v, want the job packed under one layer-3 network node", a)
	}
	launcher := []string{"spec", "mpiReplicaSpecs", "Launcher", "template", "spec"}
	if sel := at(append(launcher, "nodeSelector")...); !reflect.DeepEqual(sel, map[string]any{"gpucluster.io/pool": "system"}) {
		t.Errorf("the launcher selects %v, want a system node", sel)
	}
	c := at(launcher...).(map[string]any)["containers"].([]any)[0].(map[string]any)
	if r := c["resources"]; !reflect.DeepEqual(r, map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "1Gi"}, "limits": map[string]any{"memory": "1Gi"}}) {
		t.Errorf("the launcher asks for %v, want 500m CPU and 1Gi (the system flavor's quota) and no GPU", r)
	}
	// mpirun between two readings of the EFA counters, which the launcher's environment carries.
	args := toStrings(c["args"])
	if len(args) < 5 || !reflect.DeepEqual(args[:4], []string{"bash", "-c", topology.EFACountersLauncherScript(), "record-efa-counters"}) {
		t.Fatalf("the launcher runs %q, want mpirun between two readings of the EFA counters", args)
	}
	if cmd := strings.Join(args[4:], " "); !strings.HasPrefix(cmd, "mpirun ") || !strings.Contains(cmd, "-np 16 -N 8 ") || at("spec", "slotsPerWorker") != float64(8) {
		t.Errorf("mpirun %q with %v slots per worker, want 16 ranks, 8 a node", cmd, at("spec", "slotsPerWorker"))
	}
	if !slices.ContainsFunc(c["env"].([]any), func(e any) bool {
		m := e.(map[string]any)
		return m["name"] == topology.EFACountersRequestEnv && m["value"] == topology.EFACountersRequestScript()
	}) {
		t.Errorf("the launcher's environment has no %s: %v", topology.EFACountersRequestEnv, c["env"])
	}
	wantVolume := map[string]any{"name": "efa-counters", "hostPath": map[string]any{"path": topology.EFACountersDir, "type": "DirectoryOrCreate"}}
	if v := at(append(podSpec, "volumes")...); !slices.ContainsFunc(v.([]any), func(x any) bool { return reflect.DeepEqual(x, wantVolume) }) {
		t.Errorf("workers mount %v, want the counters exchange %v", v, wantVolume)
	}
	if cmd := toStrings(c["command"]); !reflect.DeepEqual(cmd, []string{"bash", "-c", WaitForWorkers, "wait-for-workers"}) {
		t.Errorf("the launcher runs %q before mpirun, want the wait for its workers", cmd)
	}
}

// TestLauncherWaitsForItsWorkers runs the launcher's wait as the pod runs it, with ssh and
// mpirun replaced by stand-ins: ssh fails for worker-1 twice (sshd not up yet, as while its
// image is pulled), and mpirun prints its arguments. The wait asks each worker of the hostfile
// with the operator's ssh options until it answers, then runs mpirun with its arguments intact.
func TestLauncherWaitsForItsWorkers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string { return writeFile(t, dir, name, body, mode) }
	hostfile := write("hostfile", "job-worker-0.job.default.svc slots=8\njob-worker-1.job.default.svc slots=8\n", 0o644)
	write("ssh", `#!/bin/sh
echo "ssh $*" >> "$0.calls"
case "$*" in *worker-1*) n=$(cat "$0.w1" 2>/dev/null || echo 0); echo $((n+1)) > "$0.w1"; [ "$n" -ge 2 ] || exit 255 ;; esac
`, 0o755)
	write("mpirun", "#!/bin/sh\nprintf '[%s]' mpirun \"$@\"; echo\n", 0o755)
	cmd := exec.Command("bash", "-c", WaitForWorkers, "wait-for-workers", "mpirun", "-np", "16", "-x", "A B")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "OMPI_MCA_orte_default_hostfile="+hostfile,
		"OMPI_MCA_plm_rsh_args=-o ConnectionAttempts=10", "WORKER_POLL_SECONDS=0.1")
	out, err := cmd.CombinedOutput()
	calls, _ := os.ReadFile(filepath.Join(dir, "ssh.calls"))
	if err != nil || strings.Count(string(out), "waiting for worker job-worker-1.job.default.svc") != 2 ||
		!strings.HasSuffix(string(out), "[mpirun][-np][16][-x][A B]\n") {
		t.Errorf("the wait: %v\n%s", err, out)
	}
	if !strings.Contains(string(calls), "ssh -o BatchMode=yes -o ConnectTimeout=5 -o ConnectionAttempts=10 job-worker-0.job.default.svc true") ||
		strings.Count(string(calls), "job-worker-1") != 3 {
		t.Errorf("ssh was run as:\n%s", calls)
	}
}

// TestLauncherRecordsEFACounters runs the launcher's wrapper as the pod runs it, with ssh
// standing in for the workers (it runs the piped request on this machine, as sh on a worker
// would) and the real reader loop answering from a sysfs tree of our own: the log gets every
// worker's reading before mpirun's output and after it, and the run's exit code is mpirun's.
func TestLauncherRecordsEFACounters(t *testing.T) {
	dir := t.TempDir()
	hostfile := writeFile(t, dir, "hostfile", "job-worker-0.job.default.svc slots=8\njob-worker-1.job.default.svc slots=8\n", 0o644)
	exchange := startReader(t, dir)
	// ssh [options] HOST sh -s -- PHASE: run what comes after the host here.
	writeFile(t, dir, "bin/ssh", "#!/bin/sh\nwhile [ $# -gt 0 ] && [ \"$1\" != sh ]; do shift; done\nexec \"$@\"\n", 0o755)
	writeFile(t, dir, "bin/mpirun", "#!/bin/sh\necho \"all_reduce_perf ran\"; exit 3\n", 0o755)
	cmd := exec.Command("bash", "-c", topology.EFACountersLauncherScript(), "record-efa-counters", "mpirun", "-np", "16")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "OMPI_MCA_orte_default_hostfile="+hostfile,
		"DIR="+exchange, topology.EFACountersRequestEnv+"="+topology.EFACountersRequestScript())
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit %v, want mpirun's 3", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	before, after := readerAnswer(topology.EFAPhaseBefore), readerAnswer(topology.EFAPhaseAfter)
	if !reflect.DeepEqual(lines, []string{before, before, "all_reduce_perf ran", after, after}) {
		t.Errorf("the launcher's log:\n%s", out)
	}
}

// writeFile writes name under dir, making its directories, and returns its path.
func writeFile(t *testing.T, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return f
}

// startReader runs the real reader loop until the test ends, as node-a's reader, on a sysfs
// tree of our own under dir (one device, rdmap79s0: tx_bytes 100, rx_bytes 200); it answers in
// the exchange directory it returns.
func startReader(t *testing.T, dir string) string {
	t.Helper()
	writeFile(t, dir, "sys/class/infiniband/rdmap79s0/ports/1/hw_counters/tx_bytes", "100\n", 0o644)
	writeFile(t, dir, "sys/class/infiniband/rdmap79s0/ports/1/hw_counters/rx_bytes", "200\n", 0o644)
	exchange := filepath.Join(dir, "exchange")
	if err := os.Mkdir(exchange, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reader := exec.CommandContext(ctx, "bash", "-c", topology.EFACountersReaderScript())
	reader.Env = append(os.Environ(), "DIR="+exchange, "SYS="+filepath.Join(dir, "sys"), "NODE_NAME=node-a")
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); reader.Wait() })
	return exchange
}

// readerAnswer is the line startReader's reader answers a request of the phase with.
func readerAnswer(phase string) string {
	return topology.EFACounterLine(phase, "node-a", "rdmap79s0", map[string]uint64{"tx_bytes": 100, "rx_bytes": 200})
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestEFAJobsFailFast: on an EFA pool the MPIJob's ranks (mpirun -x from the launcher's
// environment) and the TrainJob's nodes get NCCL_NET, so that NCCL fails at initialisation
// instead of running over TCP sockets when aws-ofi-nccl cannot start.
func TestEFAJobsFailFast(t *testing.T) {
	pool, objs := p5WithTraining(t, "[train.py]")
	kinds := map[string]bool{}
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		kinds[o["kind"].(string)] = true
		if !strings.Contains(string(data), `{"name":"NCCL_NET","value":"`+topology.OFIPluginName+`"}`) {
			t.Errorf("pool %s: the %s carries no NCCL_NET=%s: %s", pool.Name, o["kind"], topology.OFIPluginName, data)
		}
		if o["kind"] == "MPIJob" && !strings.Contains(string(data), `"-x","NCCL_NET"`) {
			t.Errorf("pool %s: mpirun does not pass NCCL_NET to the ranks: %s", pool.Name, data)
		}
	}
	if !kinds["MPIJob"] || !kinds["TrainJob"] {
		t.Errorf("pool %s: jobs %v, want an MPIJob and a TrainJob to check", pool.Name, kinds)
	}
}

// p5WithTraining is the pool of a stack of one p5-efa pool with the training command given (a
// YAML list), and its benchmark objects.
func p5WithTraining(t *testing.T, command string) (topology.PoolSpec, []map[string]any) {
	t.Helper()
	st, err := topology.ParseStack("t.yaml", []byte("config:\n  aws:region: us-east-1\n"+
		"  gpucluster:benchmarks: {enabled: true, trainingCommand: "+command+"}\n  gpucluster:pools: [{name: gpu, profile: p5-efa}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	stack, err := topology.DeriveStack(st, testDay)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(stack, stack.Pools[0])
	if err != nil {
		t.Fatal(err)
	}
	return stack.Pools[0], objs
}

// trainJobOf is the TrainJob the p5-efa profile's pool gets with a training command.
func trainJobOf(t *testing.T) map[string]any {
	t.Helper()
	_, objs := p5WithTraining(t, `[train.py, --epochs, "1"]`)
	for _, o := range objs {
		if o["kind"] == "TrainJob" {
			return o
		}
	}
	t.Fatalf("no TrainJob among %v", objs)
	return nil
}

// trainerRun runs a TrainJob's trainer command as its pod would, with torchrun replaced by a
// stand-in script, the real reader loop answering from a sysfs tree of our own, and the
// environment the TrainJob gives the container.
type trainerRun struct {
	dir, exchange string
	cmd           *exec.Cmd
}

func startTrainer(t *testing.T, job map[string]any, torchrun string) *trainerRun {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "bin/torchrun", torchrun, 0o755)
	r := &trainerRun{dir: dir, exchange: startReader(t, dir)}
	tr := job["spec"].(map[string]any)["trainer"].(map[string]any)
	command := toStrings(tr["command"])
	r.cmd = exec.Command(command[0], command[1:]...)
	r.cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "DIR="+r.exchange)
	for _, e := range tr["env"].([]any) {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			r.cmd.Env = append(r.cmd.Env, m["name"].(string)+"="+v)
		}
	}
	return r
}

// TestTrainingRecordsEFACounters: on an EFA pool each training pod mounts the counters'
// exchange directory (through gpucluster's runtime patch, on the trainer container) and runs
// torchrun between two readings of its node, which land in its own log; the pod's exit code is
// torchrun's.
func TestTrainingRecordsEFACounters(t *testing.T) {
	job := trainJobOf(t)
	rj := job["spec"].(map[string]any)["runtimePatches"].([]any)[0].(map[string]any)["trainingRuntimeSpec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any)[0].(map[string]any)
	pod := rj["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	wantVolume := map[string]any{"name": "efa-counters", "hostPath": map[string]any{"path": topology.EFACountersDir, "type": "DirectoryOrCreate"}}
	if !slices.ContainsFunc(pod["volumes"].([]any), func(x any) bool { return reflect.DeepEqual(x, wantVolume) }) {
		t.Errorf("the training pods' volumes %v lack the counters exchange %v", pod["volumes"], wantVolume)
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	wantMount := map[string]any{"name": "efa-counters", "mountPath": topology.EFACountersDir}
	if c["name"] != topology.TrainerContainer || !slices.ContainsFunc(c["volumeMounts"].([]any), func(x any) bool { return reflect.DeepEqual(x, wantMount) }) {
		t.Errorf("container %v mounts %v, want %v in %s", c["name"], c["volumeMounts"], wantMount, topology.TrainerContainer)
	}
	r := startTrainer(t, job, "#!/bin/sh\necho \"torchrun $*\"; exit 3\n")
	out, err := r.cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit %v, want torchrun's 3\n%s", err, out)
	}
	before, after := readerAnswer(topology.EFAPhaseBefore), readerAnswer(topology.EFAPhaseAfter)
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); !reflect.DeepEqual(lines, []string{before, "torchrun train.py --epochs 1", after}) {
		t.Errorf("the training pod's log:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(r.exchange, "*")); len(left) > 0 {
		t.Errorf("requests or answers left behind: %v", left)
	}
}

// TestTrainingPodHandsOnTERM: a training pod told to stop (its deletion, the deadline: TERM to
// the container's first process, the wrapper) hands the signal to torchrun at once, which ends
// its ranks itself, and still records the reading after; the exit code is torchrun's.
func TestTrainingPodHandsOnTERM(t *testing.T) {
	r := startTrainer(t, trainJobOf(t), "#!/bin/sh\ntrap 'echo torchrun stopping; exit 143' TERM\ntouch \"$DIR/../started\"\nwhile :; do sleep 0.05; done\n")
	var out strings.Builder
	r.cmd.Stdout = &out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(r.dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in torchrun never started:\n%s", out.String())
		}
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		r.cmd.Process.Kill()
		t.Fatalf("the wrapper did not hand TERM on: still running 20 s after it\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 143 {
		t.Errorf("exit %v, want torchrun's 143", err)
	}
	log := out.String()
	if !strings.Contains(log, "torchrun stopping") || !strings.Contains(log, "phase="+topology.EFAPhaseAfter) {
		t.Errorf("the training pod's log:\n%s", log)
	}
}
