package kubeapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpucluster/gpucluster/test/harness"
)

// kwok (sigs.k8s.io/kwok) plays the kubelet of nodes that no instance backs: KwokNode objects
// are kept Ready, their pods go Running and Ready, the pods of Jobs complete, pods marked for
// deletion go, and `kubectl logs` is served from a file a Logs object names. A stand-in for the
// GPU nodes' kubelets in the tests, named as such: no container runs.
const (
	KwokModule  = "sigs.k8s.io/kwok"
	KwokVersion = harness.KwokVersion
	KwokBuild   = "kwok"
	// KwokNodeAnnotation marks a node kwok manages (kwok's own convention, kwokctl's selector).
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
)

// kwokStages are the lifecycle kwokctl configures by default (pkg/kwokctl/runtime/cluster.go),
// from the module's own stage manifests: a node initialized (addresses, the kubelet endpoint
// kwok serves logs on, Ready) and kept alive, a pod made Ready at once, a Job's pod completed
// with exit code 0, a pod marked for deletion deleted. The kwok binary has no stages of its own.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat/node-heartbeat.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// kwokCRDs are the kinds the tests create while kwok runs: a pod's log files (Logs, one pod;
// ClusterLogs, by namespace and name).
var kwokCRDs = []string{"Logs", "ClusterLogs"}

// StartKwok runs kwok against the server as the kubelet of every node annotated
// KwokNodeAnnotation=fake (KwokNode), listening on loopback for the API server's log requests
// (kube-apiserver reaches a node's kubelet at its address and daemon endpoint port, which kwok
// gives its nodes; without --kubelet-certificate-authority it does not check kwok's
// self-signed certificate). It installs kwok's Logs and ClusterLogs CRDs from its module first.
// Beside the kubelet stand-in (StartKubeletStandIn), each plays its own nodes: the stand-in
// leaves the pods of kwok's nodes to kwok.
func (s *Server) StartKwok() error { return s.StartKwokWith(KwokOptions{}) }

// KwokOptions change kwok's default lifecycle.
type KwokOptions struct {
	// JobPodsRunFor is how long a Job's pod runs before kwok completes it (0: at once): a
	// stand-in for the time its command takes, during which the rest of the job (an MPIJob's
	// workers) starts around it, as on a cluster.
	JobPodsRunFor time.Duration
	// JobPodsFail ends a Job's pod as a failed command does (exit code 1, phase Failed) instead of
	// completing it: a job whose launcher fails every try.
	JobPodsFail bool
}

// StartKwokWith is StartKwok with options.
func (s *Server) StartKwokWith(o KwokOptions) error {
	bin, err := binary(KwokBuild)
	if err != nil {
		return err
	}
	mod, err := kwokModuleDir()
	if err != nil {
		return err
	}
	var config []string
	for _, f := range kwokStages {
		b, err := os.ReadFile(filepath.Join(mod, f))
		if err != nil {
			return fmt.Errorf("kwok's stages: %w", err)
		}
		if strings.HasSuffix(f, "/pod-complete.yaml") && (o.JobPodsRunFor > 0 || o.JobPodsFail) {
			stage, err := yamlToObject(b)
			if err != nil {
				return err
			}
			spec := stage["spec"].(map[string]any)
			if o.JobPodsRunFor > 0 {
				// kwok's Stage delay (pkg/apis/v1alpha1 StageDelay): how long after a pod matches.
				spec["delay"] = map[string]any{"durationMilliseconds": o.JobPodsRunFor.Milliseconds()}
			}
			if o.JobPodsFail {
				// The stage's status template, ended as the kubelet reports a container that exited 1.
				next := spec["next"].(map[string]any)
				tmpl := next["statusTemplate"].(string)
				for _, r := range [][2]string{{"exitCode: 0", "exitCode: 1"}, {"reason: Completed", "reason: Error"}, {"phase: Succeeded", "phase: Failed"}} {
					if !strings.Contains(tmpl, r[0]) {
						return fmt.Errorf("kwok's pod-complete stage has no %q to turn into a failure", r[0])
					}
					tmpl = strings.Replace(tmpl, r[0], r[1], 1)
				}
				next["statusTemplate"] = tmpl
			}
			if b, err = json.Marshal(stage); err != nil {
				return err
			}
		}
		config = append(config, strings.TrimSpace(string(b)))
	}
	for _, kind := range kwokCRDs {
		b, err := os.ReadFile(filepath.Join(mod, "kustomize", "crd", "bases", "kwok.x-k8s.io_"+strings.ToLower(kind)+".yaml"))
		if err != nil {
			return fmt.Errorf("kwok's CRDs: %w", err)
		}
		crd, err := yamlToObject(b)
		if err != nil {
			return err
		}
		if err := s.Create(crd); err != nil {
			return fmt.Errorf("installing kwok's CRD %s: %w", kind, err)
		}
		if err := s.waitEstablished(crd, 30*time.Second); err != nil {
			return err
		}
	}
	configFile := filepath.Join(s.dir, "kwok.yaml")
	if err := os.WriteFile(configFile, []byte(strings.Join(config, "\n---\n")+"\n"), 0o644); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	kubeconfig, err := s.kubeconfig()
	if err != nil {
		return err
	}
	// HOME in the server's directory: kwok also loads ~/.kwok/kwok.yaml when it exists, and a
	// developer's must not change the tests.
	_, err = s.startEnv("kwok", bin, []string{"HOME=" + s.dir},
		"--kubeconfig="+kubeconfig, "--config="+configFile,
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"="+kwokNodeValue,
		"--node-ip=127.0.0.1", fmt.Sprintf("--node-port=%d", ports[0]), fmt.Sprintf("--server-address=127.0.0.1:%d", ports[0]),
		"--enable-crds="+strings.Join(kwokCRDs, ","))
	return err
}

// kwokModuleDir is kwok's module in the module cache (build/kwok/go.mod pins it).
func kwokModuleDir() (string, error) { return moduleDirIn(buildDir(KwokBuild), KwokModule) }

// CreateKwokNode registers a KwokNode, waits until kwok reports it Ready, and then does what the
// node lifecycle controller does (the harness runs none): it lifts the not-ready taint the API
// server put on the new node.
func (s *Server) CreateKwokNode(node map[string]any) error {
	if err := s.Create(node); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Get(node)
		if err != nil {
			return err
		}
		status, _ := got["status"].(map[string]any)
		conditions, _ := status["conditions"].([]any)
		for _, c := range conditions {
			if m, _ := c.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
				return s.liftNotReadyTaint(node)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kwok did not report node %s Ready in 30 s:\n%s", name(node), s.logTail("kwok"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// KwokNode is a Node as its kubelet registers it before it reports Ready: the well-known labels,
// the given ones, taints and allocatable, and the annotation that gives it to kwok, which
// initializes it (its addresses, the endpoint logs are read from, Ready) and keeps it alive.
func KwokNode(name string, labels map[string]string, taints []map[string]any, allocatable map[string]string) map[string]any {
	n := Node(name, labels, taints, allocatable)
	md := n["metadata"].(map[string]any)
	md["annotations"] = map[string]any{KwokNodeAnnotation: kwokNodeValue}
	delete(n["status"].(map[string]any), "conditions")
	return n
}

// KwokLogs is the Logs object that makes kwok serve file as the log of a pod's container
// (`kubectl logs`). The file is in the CRI log format the kubelet serves from ("<RFC 3339 time>
// stdout F <line>" per line: CRILogLines writes it).
func KwokLogs(namespace, pod, container, file string) map[string]any {
	return map[string]any{"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
		"metadata": map[string]any{"name": pod, "namespace": namespace},
		"spec":     map[string]any{"logs": []any{map[string]any{"containers": []any{container}, "logsFile": file}}}}
}

// CRILogLines is text as a container runtime writes a container's standard output for the
// kubelet to serve: each line stamped with its time, the stream, and F (a full line).
func CRILogLines(text string, at time.Time) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(&b, "%s stdout F %s\n", at.UTC().Format(time.RFC3339Nano), line)
	}
	return b.String()
}

// MPIJobKwokOptions is kwok's lifecycle for an MPIJob's pods: the launcher (a Job's pod) runs
// 10 s, as mpirun's sweep would, and meanwhile Kueue places the workers and kwok runs them.
// Under Kueue the MPI operator v0.8.2 starts the launcher as it starts the workers, whatever its
// launcherCreationPolicy (kubeflow/mpi-operator#615): a launcher completed at once would finish
// the job before its workers exist.
var MPIJobKwokOptions = KwokOptions{JobPodsRunFor: 10 * time.Second}

// MPIWorkerLog is what an MPIJob worker's container prints while the launcher's mpirun uses it:
// its sshd listening, on port 2222 as the MPI operator's base images configure it (a log of our
// own, in that shape).
const MPIWorkerLog = "Server listening on 0.0.0.0 port 2222.\nServer listening on :: port 2222.\n"

// ServeLogs makes kwok serve, for every pod of namespace, each named container's log (text in
// the CRI format, CRILogLines): files in the server's directory, and one ClusterLogs object
// (name) naming them.
func (s *Server) ServeLogs(name, namespace string, logs map[string]string) error {
	dir, err := os.MkdirTemp(s.dir, "logs-")
	if err != nil {
		return err
	}
	var entries []any
	for _, container := range slices.Sorted(maps.Keys(logs)) {
		f := filepath.Join(dir, container+".log")
		if err := os.WriteFile(f, []byte(logs[container]), 0o644); err != nil {
			return err
		}
		entries = append(entries, map[string]any{"containers": []any{container}, "logsFile": f})
	}
	return s.Create(map[string]any{"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"selector": map[string]any{"matchNamespaces": []any{namespace}}, "logs": entries}})
}

// ServeLogOnNode makes kwok serve text (CRI format, CRILogLines) as the named container's log
// of every pod in namespace that carries label=value and runs on node, from the moment the pod
// is there (a Logs object for one pod wins over the namespace's ClusterLogs): one node whose
// check finds a fault while the others' logs pass. stop ends the watch.
func (s *Server) ServeLogOnNode(namespace, label, value, node, container, text string) (stop func(), err error) {
	f, err := os.CreateTemp(s.dir, "node-log-")
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(text); err != nil {
		return nil, err
	}
	f.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		served := map[string]bool{}
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			pods, err := s.List(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"namespace": namespace}})
			if err != nil {
				continue
			}
			for _, p := range pods {
				md, _ := p["metadata"].(map[string]any)
				labels, _ := md["labels"].(map[string]any)
				spec, _ := p["spec"].(map[string]any)
				pod, _ := md["name"].(string)
				if labels[label] == value && spec["nodeName"] == node && !served[pod] {
					served[pod] = true
					s.Create(KwokLogs(namespace, pod, container, f.Name()))
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }, nil
}
