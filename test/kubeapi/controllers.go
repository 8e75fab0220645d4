package kubeapi

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// StartScheduler runs a real kube-scheduler (the same Kubernetes release as the API server)
// against the server: pods created afterwards are bound to the Node objects the test creates,
// by the scheduler's own filters (resources, node selectors, taints, affinity). No serving port
// (--secure-port=0) and no leader election: one scheduler, for one test run.
func (s *Server) StartScheduler() error {
	return s.runClient(ControlPlaneBuild, "kube-scheduler", func(kubeconfig string) []string {
		return []string{"kube-scheduler", "--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1"}
	})
}

// StartJobController runs Kubernetes' own Job controller (pkg/controller/job of the same release,
// started as kube-controller-manager starts it; see build/kube): Jobs get their pods (Indexed
// names, completion-index env, subdomain) as in a cluster. No other controller runs (no node
// lifecycle, no garbage collector).
func (s *Server) StartJobController() error {
	return s.runClient(ControlPlaneBuild, "kube-job-controller", func(kubeconfig string) []string {
		return []string{"kube-job-controller", "--kubeconfig=" + kubeconfig}
	})
}

// StartAppControllers runs Kubernetes' own Deployment, ReplicaSet, Namespace and ServiceAccount
// controllers and its root CA publisher (the same release, started as kube-controller-manager
// starts them; see build/kube): a Deployment gets its pods for the scheduler to place, a deleted
// namespace is emptied and goes, every namespace gets its default service account and its
// kube-root-ca.crt. Where no kubelet stand-in runs (start it first), they also finish pod
// deletions.
func (s *Server) StartAppControllers() error {
	return s.runClient(ControlPlaneBuild, "kube-app-controllers", func(kubeconfig string) []string {
		return []string{"kube-app-controllers", "--kubeconfig=" + kubeconfig, "--root-ca-file=" + s.servingCA,
			fmt.Sprintf("--finish-pod-deletions=%t", !s.kubeletStandIn)}
	})
}

// StartGarbageCollector runs Kubernetes' own garbage collector (the same release, built and
// started as kube-controller-manager does; see build/kube): an object whose owners are gone is
// deleted, so that deleting a job takes its Kueue Workload, JobSet, Jobs and pods with it and
// Kueue gives its quota to the next job, as in a cluster.
func (s *Server) StartGarbageCollector() error {
	return s.runClient(ControlPlaneBuild, "kube-garbage-collector", func(kubeconfig string) []string {
		return []string{"kube-garbage-collector", "--kubeconfig=" + kubeconfig}
	})
}

// StartDaemonSetEndpointsControllers runs Kubernetes' own DaemonSet and Endpoints controllers
// (the same release, started as kube-controller-manager starts them; see build/kube): a
// DaemonSet gets a pod per matching node and the status its rollout is read from, a Service the
// addresses of its ready pods.
func (s *Server) StartDaemonSetEndpointsControllers() error {
	return s.runClient(ControlPlaneBuild, "kube-daemonset-endpoints-controllers", func(kubeconfig string) []string {
		return []string{"kube-daemonset-endpoints-controllers", "--kubeconfig=" + kubeconfig}
	})
}

// RunImage is an image whose pods the kubelet stand-in runs, with a binary the harness built
// (Build, the name of a binary of the build) placed at the image's entry point, and the files the
// image carries for its program (Dirs: a directory of the image → a host directory with the same
// files, copied into each pod's root).
type RunImage struct {
	Image, Entrypoint, Build string
	Dirs                     map[string]string
}

// StartKubeletStandIn runs the harness's stand-in of every node's kubelet (see build/kube): a
// pod whose every image is one of images runs for real, in a network namespace and root
// directory of its own, with its own command, volumes and service account; every other pod bound
// to a node is reported started, its containers running and ready, with a pod IP, and nothing
// runs. The pods of kwok's nodes (KwokNode) it leaves to kwok (StartKwok). What waits on readiness (the kubernetes provider's awaits, the API server's calls to a
// webhook) goes on as on EKS. Running pods needs root (network namespaces, chroot). Start it
// before StartAppControllers: it finishes pod deletions once their containers stop.
func (s *Server) StartKubeletStandIn(images ...RunImage) error {
	// kwok's nodes are kwok's (StartKwok): the stand-in leaves their pods alone.
	args := []string{"kubelet-stand-in", "--leave-nodes-with-annotation=" + KwokNodeAnnotation + "=" + kwokNodeValue}
	if len(images) > 0 {
		if os.Geteuid() != 0 {
			return fmt.Errorf("the kubelet stand-in runs the operators' pods in network namespaces of their own, which needs root: run the tests as root (the CI machine does)")
		}
		args = append(args, "--api-server-host="+PodGateway, fmt.Sprintf("--api-server-port=%d", s.port), "--state-dir="+filepath.Join(s.dir, "pods"))
		for _, im := range images {
			bin, err := binary(im.Build)
			if err != nil {
				return err
			}
			run := "--run=" + im.Image + "=" + im.Entrypoint + "=" + bin
			for _, in := range slices.Sorted(maps.Keys(im.Dirs)) {
				run += "=" + in + ":" + im.Dirs[in]
			}
			args = append(args, run)
		}
	}
	if err := s.runClient(ControlPlaneBuild, "kubelet-stand-in", func(kubeconfig string) []string {
		return append(args, "--kubeconfig="+kubeconfig)
	}); err != nil {
		return err
	}
	s.kubeletStandIn = true
	return nil
}

// mpiOperatorHealthPort is where the operator release serves /healthz, on every interface; it has
// no flag to move it.
const mpiOperatorHealthPort = 8080

// StartMPIOperator runs the MPI operator release whose CRD the server serves, as gpucluster
// deploys it: watching only namespace (--namespace), electing itself leader through a Lease in
// lockNamespace, with the permissions of the service account whose token it is given (not the
// harness's admin), so that the Roles gpucluster grants it are what make its MPIJobs get their
// worker pods, launcher Job, ssh secret and hostfile. It returns a function that stops it. Its
// fixed health port allows one operator per machine: test processes take turns (a lock file in
// the temporary directory, whatever their cache, held until Stop), and a port taken by another
// program is an error that says so.
func (s *Server) StartMPIOperator(namespace, lockNamespace, token string) (stop func(), err error) {
	if !s.mpiPortHeld {
		lock, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("gpucluster-port-%d.lock", mpiOperatorHealthPort)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			lock.Close()
			return nil, err
		}
		s.locks = append(s.locks, lock)
		s.mpiPortHeld = true
	}
	// The previous operator may still be releasing the port.
	var l net.Listener
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if l, err = net.Listen("tcp", fmt.Sprintf(":%d", mpiOperatorHealthPort)); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the MPI operator %s serves its health check on port %d, which another program holds (%v): free it to run these tests",
			MPIOperatorVersion, mpiOperatorHealthPort, err)
	}
	l.Close()
	bin, err := binary(MPIOperatorBuild)
	if err != nil {
		return nil, err
	}
	name := "mpi-operator-" + namespace
	kubeconfig, err := s.tokenKubeconfig(name, token)
	if err != nil {
		return nil, err
	}
	p, err := s.start(name, bin, "--kubeConfig="+kubeconfig, "--namespace="+namespace, "--lock-namespace="+lockNamespace, "--v=1")
	if err != nil {
		return nil, err
	}
	return func() { s.stopProcess(p) }, nil
}

// runClient builds (or reuses) a build module's binary and runs it as a client of the server.
func (s *Server) runClient(build, name string, args func(kubeconfig string) []string) error {
	bin, err := binary(build)
	if err != nil {
		return err
	}
	kubeconfig, err := s.kubeconfig()
	if err != nil {
		return err
	}
	return s.run(name, bin, args(kubeconfig)...)
}

// tokenKubeconfig writes a kubeconfig that authenticates with a bearer token (a service
// account's): a client that has only the permissions RBAC grants that account.
func (s *Server) tokenKubeconfig(name, token string) (string, error) {
	path := filepath.Join(s.dir, name+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: %s}}]
current-context: test
`, s.URL, name, token, name)
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// kubeconfig writes (once) a kubeconfig for the harness's own clients: the admin token over
// loopback, and the server's certificate is this run's self-signed one.
func (s *Server) kubeconfig() (string, error) {
	path := filepath.Join(s.dir, "admin.kubeconfig")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
`, s.URL, s.token)
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// PodLogs are the tails of the logs of the pods the kubelet stand-in ran (each container's,
// kept after its pod went) and of the stand-in itself, for a test that failed.
func (s *Server) PodLogs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(s.dir, "pods", "logs", "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "--- pod log %s:\n%s\n", strings.TrimSuffix(filepath.Base(f), ".log"), data)
	}
	if s.kubeletStandIn {
		fmt.Fprintf(&b, "--- kubelet stand-in log:\n%s\n", s.logTail("kubelet-stand-in"))
	}
	return b.String()
}
