package kubeapi

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// Server is a running kube-apiserver backed by its own etcd.
type Server struct {
	URL   string
	token string
	http  *http.Client
	dir   string
	procs []*process
	locks []*os.File // held while the server runs (the MPI operator's fixed port)
	// mpiPortHeld: this server holds the MPI operator's port lock (its operators take turns).
	mpiPortHeld bool
	// webhookCert is the serving certificate and key (PEM) of the controllers' webhooks.
	webhookCert [2][]byte
	// port is the API server's port; servingCA the file of the CA its certificate is (pods
	// trust it).
	port      int
	servingCA string
	// kubeletStandIn: the kubelet stand-in runs, and finishes pod deletions.
	kubeletStandIn bool

	mu        sync.Mutex
	resources map[string]apiResource // "group/version/Kind" → resource
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error
}

type apiResource struct {
	name       string
	namespaced bool
}

const adminToken = "gpucluster-test-admin-token"

// Start builds (or reuses) the binaries and starts etcd and kube-apiserver on free loopback
// ports, then installs the Karpenter and MPI operator CRDs. Stop it with Stop.
func Start() (*Server, error) { return start(true) }

// StartEmpty starts a server without the CRDs, as a new EKS cluster is: for tests in which the
// program under test installs them (the real-engine tests).
func StartEmpty() (*Server, error) { return start(false) }

func start(withCRDs bool) (*Server, error) {
	etcdBin, err := binary(EtcdBuild)
	if err != nil {
		return nil, err
	}
	kubeBin, err := binary(ControlPlaneBuild)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gpucluster-kubeapi-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, token: adminToken, resources: map[string]apiResource{}}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := s.run("etcd", etcdBin, "--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=error", "--unsafe-no-fsync"); err != nil {
		return nil, err
	}
	keyFile, err := writeServiceAccountKey(dir)
	if err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	certs, err := writeServerCerts(dir)
	if err != nil {
		return nil, err
	}
	s.servingCA = certs.servingCert
	s.port = ports[2]
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := s.run("kube-apiserver", kubeBin, "kube-apiserver", "--etcd-servers="+etcdURL,
		// Every address: the tests reach it on loopback, the pods the kubelet stand-in runs at
		// their gateway (PodGateway), each from its own network namespace.
		fmt.Sprintf("--secure-port=%d", ports[2]), "--bind-address=0.0.0.0", "--advertise-address=127.0.0.1",
		"--tls-cert-file="+certs.servingCert, "--tls-private-key-file="+certs.servingKey,
		// Admission webhooks, CRD conversion webhooks and aggregated APIs are called at a
		// ready endpoint of their Service (its EndpointSlices), not at its cluster IP, which
		// nothing here routes (cmd/kube-apiserver/app/server.go, the service resolver).
		"--enable-aggregator-routing=true",
		"--requestheader-client-ca-file="+certs.frontProxyCA, "--requestheader-allowed-names="+frontProxyClient,
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+certs.proxyClientCert, "--proxy-client-key-file="+certs.proxyClientKey,
		"--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+keyFile,
		"--service-account-signing-key-file="+keyFile, "--service-cluster-ip-range=10.96.0.0/16",
		// EKS's API server allows privileged containers (node agents such as the VPC CNI need
		// them); without the flag the upstream default refuses them.
		"--allow-privileged=true",
		// v1.37's endpoint reconciler refused a loopback advertise address (v1.34 accepted it); nothing here
		// reaches the server through the kubernetes Service, so it keeps no endpoints.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false", "--profiling=false", "--v=0"); err != nil {
		return nil, err
	}
	// The server's certificate is self-signed for this run on loopback only.
	s.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := s.waitReady(90 * time.Second); err != nil {
		return nil, err
	}
	var manifests [][]byte
	if withCRDs {
		if manifests, err = crds(); err != nil {
			return nil, err
		}
	}
	for _, crd := range manifests {
		obj, err := yamlToObject(crd)
		if err != nil {
			return nil, err
		}
		if err := s.Create(obj); err != nil {
			return nil, fmt.Errorf("installing CRD: %w", err)
		}
		if err := s.waitEstablished(obj, 30*time.Second); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

// Stop ends the processes and removes their data.
func (s *Server) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].terminate()
	}
	s.procs = nil
	for _, l := range s.locks {
		l.Close() // releases the flock
	}
	s.locks, s.mpiPortHeld = nil, false
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *Server) run(name, bin string, args ...string) error {
	_, err := s.start(name, bin, args...)
	return err
}

// start runs a program beside the server, logging to <name>.log, until Stop or stopProcess.
func (s *Server) start(name, bin string, args ...string) (*process, error) {
	return s.startEnv(name, bin, nil, args...)
}

// startEnv is start with variables added to the test's environment.
func (s *Server) startEnv(name, bin string, env []string, args ...string) (*process, error) {
	log, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	// The kernel kills the server when the test process dies, however it dies (a panic or a
	// timeout skips Stop): a crashed test must not leave servers running into the next one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); log.Close(); close(p.done) }()
	s.procs = append(s.procs, p)
	return p, nil
}

// stopProcess stops one program started beside the server.
func (s *Server) stopProcess(p *process) {
	p.terminate()
	s.procs = slices.DeleteFunc(s.procs, func(q *process) bool { return q == p })
}

// terminate ends a process: SIGTERM, then SIGKILL after 10 s.
func (p *process) terminate() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func (s *Server) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name+".log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		for _, p := range s.procs {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited while starting (%v)\n--- %s log:\n%s", p.name, p.err, p.name, s.logTail(p.name))
			default:
			}
		}
		code, body, err := s.do("GET", "/readyz", nil)
		if err == nil && code == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("readyz %d %s %v", code, body, err)
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %s: %v\n--- kube-apiserver log:\n%s\n--- etcd log:\n%s",
		timeout, last, s.logTail("kube-apiserver"), s.logTail("etcd"))
}

func (s *Server) waitEstablished(crd map[string]any, timeout time.Duration) error {
	name := crd["metadata"].(map[string]any)["name"].(string)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		_, body, err := s.do("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, nil)
		if err == nil {
			var got struct {
				Status struct {
					Conditions []struct{ Type, Status string }
				}
			}
			if json.Unmarshal(body, &got) == nil {
				for _, c := range got.Status.Conditions {
					if c.Type == "Established" && c.Status == "True" {
						return nil
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("CRD %s not established after %s", name, timeout)
}

// Create creates an object with strict field validation: a field the schema does not know is an
// error, as is every rule of the type's validation (CEL included for CRDs).
func (s *Server) Create(obj map[string]any) error {
	return s.write("POST", "", obj, http.StatusCreated, http.StatusOK)
}

// Update replaces an object (PUT) with strict field validation.
func (s *Server) Update(obj map[string]any) error {
	return s.write("PUT", "/"+name(obj), obj, http.StatusOK)
}

// UpdateStatus replaces an object's status (PUT to its status subresource), as its controller or
// kubelet would.
func (s *Server) UpdateStatus(obj map[string]any) error {
	return s.write("PUT", "/"+name(obj)+"/status", obj, http.StatusOK)
}

// write sends an object to its collection (plus suffix), refusing unknown fields; any status but
// the accepted ones is the server's refusal, with its message.
func (s *Server) write(method, suffix string, obj map[string]any, accepted ...int) error {
	path, err := s.collectionPath(obj)
	if err != nil {
		return err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	code, resp, err := s.do(method, path+suffix+"?fieldValidation=Strict", body)
	if err != nil {
		return err
	}
	if !slices.Contains(accepted, code) {
		var status struct{ Message string }
		json.Unmarshal(resp, &status)
		if status.Message == "" {
			status.Message = string(resp)
		}
		return &RejectedError{Code: code, Kind: fmt.Sprint(obj["kind"]), Name: name(obj), Message: status.Message}
	}
	return nil
}

// RejectedError is the API server refusing an object.
type RejectedError struct {
	Code       int
	Kind, Name string
	Message    string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s %s rejected (%d): %s", e.Kind, e.Name, e.Code, e.Message)
}

// Delete deletes an object (and waits for nothing: the test server has no finalizers running).
func (s *Server) Delete(obj map[string]any) error {
	path, err := s.collectionPath(obj)
	if err != nil {
		return err
	}
	code, body, err := s.do("DELETE", path+"/"+name(obj), nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK && code != http.StatusAccepted {
		return fmt.Errorf("DELETE %s/%s: %d %s", path, name(obj), code, body)
	}
	return nil
}

// Get reads an object back.
func (s *Server) Get(obj map[string]any) (map[string]any, error) {
	path, err := s.collectionPath(obj)
	if err != nil {
		return nil, err
	}
	code, body, err := s.do("GET", path+"/"+name(obj), nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/%s: %d %s", path, name(obj), code, body)
	}
	var out map[string]any
	return out, json.Unmarshal(body, &out)
}

// List returns the objects of obj's apiVersion and kind in obj's namespace (all of them for a
// cluster-scoped kind).
func (s *Server) List(obj map[string]any) ([]map[string]any, error) {
	path, err := s.collectionPath(obj)
	if err != nil {
		return nil, err
	}
	code, body, err := s.do("GET", path, nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, code, body)
	}
	var list struct{ Items []map[string]any }
	return list.Items, json.Unmarshal(body, &list)
}

// Names are the objects of each kind (apiVersion and kind) in namespace, as Kind/name.
func (s *Server) Names(namespace string, kinds ...map[string]any) ([]string, error) {
	var out []string
	for _, k := range kinds {
		objs, err := s.List(map[string]any{"apiVersion": k["apiVersion"], "kind": k["kind"], "metadata": map[string]any{"namespace": namespace}})
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, fmt.Sprintf("%v/%s", k["kind"], name(o)))
		}
	}
	return out, nil
}

func name(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

// collectionPath finds where an object of its apiVersion and kind is created, by discovery.
func (s *Server) collectionPath(obj map[string]any) (string, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return "", errors.New("object without apiVersion or kind")
	}
	key := apiVersion + "/" + kind
	s.mu.Lock()
	r, ok := s.resources[key]
	s.mu.Unlock()
	if !ok {
		base := "/apis/" + apiVersion
		if !strings.Contains(apiVersion, "/") {
			base = "/api/" + apiVersion
		}
		code, body, err := s.do("GET", base, nil)
		if err != nil || code != http.StatusOK {
			return "", fmt.Errorf("discovery of %s: %d %s %v", apiVersion, code, body, err)
		}
		var list struct {
			Resources []struct {
				Name       string
				Kind       string
				Namespaced bool
			}
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return "", err
		}
		for _, res := range list.Resources {
			if res.Kind == kind && !strings.Contains(res.Name, "/") {
				r, ok = apiResource{res.Name, res.Namespaced}, true
			}
		}
		if !ok {
			return "", fmt.Errorf("the server has no kind %s in %s", kind, apiVersion)
		}
		s.mu.Lock()
		s.resources[key] = r
		s.mu.Unlock()
	}
	base := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		base = "/api/" + apiVersion
	}
	if !r.namespaced {
		return base + "/" + r.name, nil
	}
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	if ns == "" {
		ns = "default"
	}
	return base + "/namespaces/" + ns + "/" + r.name, nil
}

func (s *Server) do(method, path string, body []byte) (int, []byte, error) {
	return s.DoAs(s.token, method, path, "application/json", body)
}

// DoAs sends a request with another bearer token (a service account's, say), to see what the
// API server lets that identity do: the status code and body, whatever they are.
func (s *Server) DoAs(token, method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", contentType)
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeServiceAccountKey(dir string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "sa.key")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return path, os.WriteFile(path, pemBytes, 0o600)
}

// yamlToObject reads one YAML document as a JSON-compatible object.
func yamlToObject(doc []byte) (map[string]any, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return nil, err
	}
	// Round-trip through JSON so nested maps are map[string]any, as encoding/json produces.
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}
