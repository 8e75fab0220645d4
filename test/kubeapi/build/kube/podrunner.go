package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// runner runs the pods whose every container's image is one the harness builds (the operators:
// Kueue, Kubeflow Trainer, JobSet, the MPI operator, the DRA driver's ComputeDomain controller),
// as a kubelet runs them, with the pod's own
// command, arguments, environment, volumes and service account: in a sandbox of its own (see
// podsandbox.go), chrooted into a directory that holds the image's one binary at the image's
// entry point and the pod's volumes at their mount paths. Readiness is the container's own
// readiness probe; a container that exits is restarted with a back-off, and its pod's status
// says so. What differs from a kubelet, each for a reason:
//   - every container runs as root: the files the stand-in writes are its own;
//   - probes run every second whatever their period (the charts' periods are for clusters that
//     run for months; the tests wait for readiness, not for the clock), and liveness and startup
//     probes are not run;
//   - the back-off after a crash starts at 1 s and stops growing at 30 s (the kubelet's: 10 s to
//     5 minutes), for the same reason;
//   - no resource limit is enforced.
type runner struct {
	client kubernetes.Interface
	// images maps an image reference to what the harness built for it.
	images           map[string]image
	apiHost, apiPort string
	dir              string

	mu   sync.Mutex
	pods map[types.UID]*podRun
}

// image is a binary the harness built, standing for an image whose entry point is path, and
// the files the image carries besides it that its program reads (dirs: a directory of the image
// → the host directory holding the same files).
type image struct {
	entrypoint, binary string
	dirs               map[string]string
}

// parseRunFlag reads --run image=/entrypoint=binary[=/dir:hostdir ...].
func parseRunFlag(values []string) (map[string]image, error) {
	out := map[string]image{}
	for _, v := range values {
		parts := strings.Split(v, "=")
		if len(parts) < 3 || !strings.HasPrefix(parts[1], "/") {
			return nil, fmt.Errorf("--run %q: want image=/entrypoint=binary[=/dir:hostdir ...]", v)
		}
		if _, err := os.Stat(parts[2]); err != nil {
			return nil, fmt.Errorf("--run %q: %w", v, err)
		}
		im := image{entrypoint: parts[1], binary: parts[2], dirs: map[string]string{}}
		for _, d := range parts[3:] {
			in, host, ok := strings.Cut(d, ":")
			if !ok || !strings.HasPrefix(in, "/") {
				return nil, fmt.Errorf("--run %q: %q: want /dir:hostdir", v, d)
			}
			if _, err := os.Stat(host); err != nil {
				return nil, fmt.Errorf("--run %q: %w", v, err)
			}
			im.dirs[in] = host
		}
		out[parts[0]] = im
	}
	return out, nil
}

// runs reports whether the pod is one to run: every container's image is built here.
func (r *runner) runs(pod *v1.Pod) bool {
	if len(pod.Spec.Containers) == 0 || len(pod.Spec.InitContainers) > 0 {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if _, ok := r.images[c.Image]; !ok {
			return false
		}
	}
	return true
}

// running reports whether the runner holds the pod.
func (r *runner) running(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods[uid] != nil
}

// ensure starts the pod unless it runs already.
func (r *runner) ensure(ctx context.Context, pod *v1.Pod, node *v1.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods[pod.UID] != nil {
		return
	}
	runCtx, cancel := context.WithCancel(ctx)
	p := &podRun{r: r, pod: pod.DeepCopy(), node: node, cancel: cancel, done: make(chan struct{}),
		dir: filepath.Join(r.dir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))}
	r.pods[pod.UID] = p
	go func() {
		defer close(p.done)
		p.run(runCtx)
	}()
}

// stop ends the pod's containers (SIGTERM, then SIGKILL after its grace period, at most 10 s)
// and its sandbox, and waits for them.
func (r *runner) stop(uid types.UID) {
	r.mu.Lock()
	p := r.pods[uid]
	delete(r.pods, uid)
	r.mu.Unlock()
	if p != nil {
		p.cancel()
		<-p.done
	}
}

// stopAll ends every pod, for the stand-in's own end.
func (r *runner) stopAll() {
	r.mu.Lock()
	var uids []types.UID
	for uid := range r.pods {
		uids = append(uids, uid)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, uid := range uids {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop(uid) }()
	}
	wg.Wait()
}

// podRun is one pod the runner runs.
type podRun struct {
	r      *runner
	pod    *v1.Pod
	node   *v1.Node
	dir    string
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	sandbox    *sandbox
	waiting    string // why the pod's containers have not started (ContainerCreating's message)
	containers []*containerRun
	written    *v1.PodStatus
}

// containerRun is one container's process and what its status says.
type containerRun struct {
	spec     v1.Container
	proc     *exec.Cmd
	started  time.Time
	running  bool
	ready    bool
	restarts int32
	last     *v1.ContainerStateTerminated
	backoff  string // CrashLoopBackOff's message while it waits to restart
}

func (p *podRun) run(ctx context.Context) {
	log := klog.FromContext(ctx).WithValues("pod", p.pod.Namespace+"/"+p.pod.Name)
	defer os.RemoveAll(p.dir)
	for _, c := range p.pod.Spec.Containers {
		p.containers = append(p.containers, &containerRun{spec: c})
	}
	root := filepath.Join(p.dir, "root")
	// Volumes first, as the kubelet mounts them before it starts a container: a Secret that a
	// controller has not written yet holds the pod in ContainerCreating.
	for {
		err := p.mount(ctx, root, true)
		if err == nil {
			break
		}
		p.setWaiting(err.Error())
		p.writeStatus(ctx)
		var notReady errNotReady
		if !errors.As(err, &notReady) {
			log.Error(err, "mounting the pod's volumes")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	sb, err := startSandbox(p.r.apiHost)
	if err != nil {
		log.Error(err, "starting the pod's sandbox")
		p.setWaiting(err.Error())
		p.writeStatus(ctx)
		<-ctx.Done()
		return
	}
	defer sb.stop()
	p.mu.Lock()
	p.sandbox, p.waiting = sb, ""
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range p.containers {
		wg.Add(1)
		go func() { defer wg.Done(); p.keepRunning(ctx, c, root) }()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		p.probe(ctx)
		p.writeStatus(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
			if err := p.mount(ctx, root, false); err != nil && ctx.Err() == nil {
				log.Error(err, "refreshing the pod's volumes")
			}
		}
	}
}

func (p *podRun) mount(ctx context.Context, root string, first bool) error {
	for _, c := range p.pod.Spec.Containers {
		if err := mountVolumes(ctx, p.r.client, p.pod, c, root, first); err != nil {
			return err
		}
	}
	if !first {
		return nil
	}
	// The image: its one binary at its entry point, and the files it carries for it.
	for _, c := range p.pod.Spec.Containers {
		img := p.r.images[c.Image]
		if len(c.Command) > 0 && !runsEntrypoint(c.Command[0], img.entrypoint) {
			return fmt.Errorf("container %s runs %s; the harness's %s is the image's entry point %s", c.Name, c.Command[0], img.binary, img.entrypoint)
		}
		if err := placeFile(img.binary, filepath.Join(root, img.entrypoint)); err != nil {
			return err
		}
		for in, host := range img.dirs {
			if err := placeDir(host, filepath.Join(root, in)); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(filepath.Join(root, "tmp"), 0o1777)
}

// runsEntrypoint says whether a container's command is the image's entry point: its path, or a
// bare name the image's PATH resolves to it (the DRA driver's chart runs
// "compute-domain-controller", at /usr/bin in its image).
func runsEntrypoint(command, entrypoint string) bool {
	if strings.Contains(command, "/") {
		return command == entrypoint
	}
	return filepath.Base(entrypoint) == command
}

// placeFile puts the image's binary at target, linked where it can be, unless target exists.
func placeFile(source, target string) error {
	if _, err := os.Stat(target); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if err := os.Link(source, target); err == nil {
		return nil
	}
	return copyFile(source, target, 0o755) // another file system
}

func copyFile(source, target string, mode os.FileMode) error {
	data, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	return os.WriteFile(target, data, mode)
}

// placeDir copies a directory's regular files, recursively, to target: copied, not linked, since
// the source is the module cache, which the pod's processes (root here) must not write.
func placeDir(source, target string) error {
	return filepath.WalkDir(source, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(source, path)
		if err != nil {
			return err
		}
		to := filepath.Join(target, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return copyFile(path, to, 0o644)
	})
}

func (p *podRun) setWaiting(msg string) {
	p.mu.Lock()
	p.waiting = msg
	p.mu.Unlock()
}

// keepRunning runs a container's process and restarts it when it exits (restartPolicy Always,
// the only policy a Deployment's pods have), until the pod stops.
func (p *podRun) keepRunning(ctx context.Context, c *containerRun, root string) {
	backoff := time.Second
	// The log outlives the pod, as a kubelet keeps a stopped container's log for a while: a test
	// that failed shows it.
	logFile := filepath.Join(p.r.dir, "logs", p.pod.Namespace+"_"+p.pod.Name+"_"+c.spec.Name+".log")
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		klog.FromContext(ctx).Error(err, "container log")
	}
	for {
		err := p.startContainer(ctx, c, root, logFile)
		if err == nil {
			exited := make(chan error, 1)
			go func() { exited <- c.proc.Wait() }()
			select {
			case <-ctx.Done():
				grace := 10 * time.Second
				if g := p.pod.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
					grace = time.Duration(*g) * time.Second
				}
				c.proc.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(grace):
					c.proc.Process.Kill()
					<-exited
				}
				return
			case err = <-exited:
			}
			if time.Since(c.started) > time.Minute {
				backoff = time.Second // ran long enough: the kubelet resets its back-off too
			}
		}
		code := int32(1)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = int32(exit.ExitCode())
		}
		p.mu.Lock()
		c.running, c.ready = false, false
		c.last = &v1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: tail(logFile, 512),
			StartedAt: metav1.NewTime(c.started), FinishedAt: metav1.Now()}
		c.restarts++
		c.backoff = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, c.spec.Name, p.pod.Name)
		p.mu.Unlock()
		p.writeStatus(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// startContainer starts the container's process in the sandbox's network namespace, chrooted
// into the pod's root, with its environment; its output goes to the container's log.
func (p *podRun) startContainer(ctx context.Context, c *containerRun, root, logFile string) error {
	img := p.r.images[c.spec.Image]
	env, err := containerEnv(ctx, p.r.client, p.pod, c.spec, p.r.apiHost, p.r.apiPort)
	if err != nil {
		return err
	}
	var args []string
	if len(c.spec.Command) > 1 {
		args = append(args, c.spec.Command[1:]...)
	}
	args = append(args, c.spec.Args...)
	for i := range args {
		args[i] = expandEnv(args[i], env)
	}
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=" + p.sandbox.netns(), "--root=" + root, "--wd=/", img.entrypoint}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(out, "kubelet stand-in: starting %s: %v\n", img.entrypoint, err)
		return err
	}
	p.mu.Lock()
	c.proc, c.started, c.running, c.backoff = cmd, time.Now(), true, ""
	p.mu.Unlock()
	return nil
}

// probe runs each running container's readiness probe once.
func (p *podRun) probe(ctx context.Context) {
	p.mu.Lock()
	ip := ""
	if p.sandbox != nil {
		ip = p.sandbox.ip
	}
	p.mu.Unlock()
	for _, c := range p.containers {
		p.mu.Lock()
		running := c.running
		p.mu.Unlock()
		ready := running && (c.spec.ReadinessProbe == nil || probeOnce(ctx, c.spec, ip) == nil)
		p.mu.Lock()
		c.ready = ready && c.running
		p.mu.Unlock()
	}
}

// probeOnce runs a readiness probe against the pod's address.
func probeOnce(ctx context.Context, c v1.Container, ip string) error {
	pr := c.ReadinessProbe
	timeout := time.Second
	if pr.TimeoutSeconds > 0 {
		timeout = time.Duration(pr.TimeoutSeconds) * time.Second
	}
	port := func(p intstr.IntOrString) (string, error) {
		if p.Type == intstr.Int {
			return strconv.Itoa(p.IntValue()), nil
		}
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return strconv.Itoa(int(cp.ContainerPort)), nil
			}
		}
		return "", fmt.Errorf("container %s has no port named %s", c.Name, p.StrVal)
	}
	switch {
	case pr.HTTPGet != nil:
		pt, err := port(pr.HTTPGet.Port)
		if err != nil {
			return err
		}
		host := ip
		if pr.HTTPGet.Host != "" {
			host = pr.HTTPGet.Host
		}
		scheme := strings.ToLower(string(pr.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		// The kubelet does not verify a probe's certificate either.
		client := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, pt)+pr.HTTPGet.Path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("probe %s: %d", req.URL, resp.StatusCode)
		}
		return nil
	case pr.TCPSocket != nil:
		pt, err := port(pr.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, pt), timeout)
		if err == nil {
			conn.Close()
		}
		return err
	}
	return fmt.Errorf("container %s: a readiness probe the kubelet stand-in does not run (it runs httpGet and tcpSocket)", c.Name)
}

// writeStatus writes the pod's status as a kubelet reports it, when it changed.
func (p *podRun) writeStatus(ctx context.Context) {
	st := p.status()
	p.mu.Lock()
	same := p.written != nil && reflect.DeepEqual(*p.written, st)
	p.mu.Unlock()
	if same || ctx.Err() != nil {
		return
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := p.r.client.CoreV1().Pods(p.pod.Namespace).Get(ctx, p.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.UID != p.pod.UID || pod.DeletionTimestamp != nil {
			return nil
		}
		// Keep the times a condition or container already has: a kubelet's status changes
		// them only on a transition.
		next := st.DeepCopy()
		keepTimes(next, &pod.Status)
		pod.Status = *next
		_, err = p.r.client.CoreV1().Pods(p.pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "writing pod status", "pod", p.pod.Namespace+"/"+p.pod.Name)
		return
	}
	p.mu.Lock()
	p.written = &st
	p.mu.Unlock()
}

// status is the pod's status now, with zero times (keepTimes and now() fill them).
func (p *podRun) status() v1.PodStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := v1.PodStatus{Phase: v1.PodPending, QOSClass: p.pod.Status.QOSClass}
	hostIP := ""
	for _, a := range p.node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			hostIP = a.Address
		}
	}
	if hostIP != "" {
		st.HostIP, st.HostIPs = hostIP, []v1.HostIP{{IP: hostIP}}
	}
	cond := func(t v1.PodConditionType, ok bool) {
		s := v1.ConditionFalse
		if ok {
			s = v1.ConditionTrue
		}
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: t, Status: s})
	}
	allReady := p.sandbox != nil
	for _, c := range p.containers {
		cs := v1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image, RestartCount: c.restarts, Ready: c.ready}
		started := c.running
		cs.Started = &started
		switch {
		case c.running:
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.started.Truncate(time.Second))}
		case c.backoff != "":
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: c.backoff}
		default:
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating", Message: p.waiting}
		}
		if c.last != nil {
			cs.LastTerminationState.Terminated = c.last
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && c.ready
	}
	if p.sandbox != nil {
		st.Phase = v1.PodRunning
		st.PodIP, st.PodIPs = p.sandbox.ip, []v1.PodIP{{IP: p.sandbox.ip}}
	}
	cond(v1.PodReadyToStartContainers, p.sandbox != nil)
	cond(v1.PodInitialized, true)
	cond(v1.ContainersReady, allReady)
	cond(v1.PodReady, allReady)
	cond(v1.PodScheduled, true)
	return st
}

// keepTimes gives the new status the transition and start times the old one has for the same
// state, and now for a new one.
func keepTimes(next, old *v1.PodStatus) {
	now := metav1.Now()
	for i := range next.Conditions {
		c := &next.Conditions[i]
		c.LastTransitionTime = now
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	if next.Phase == v1.PodRunning {
		next.StartTime = old.StartTime
		if next.StartTime == nil {
			next.StartTime = &now
		}
	}
}

// tail is the end of a log, for a terminated container's message.
func tail(file string, n int) string {
	b, _ := os.ReadFile(file)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
