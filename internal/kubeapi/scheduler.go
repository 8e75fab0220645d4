package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StartScheduler runs a real kube-scheduler (the same Kubernetes release as the API server)
// against the server: pods created afterwards are bound to the Node objects the test creates,
// by the scheduler's own filters (resources, node selectors, taints, affinity).
func (s *Server) StartScheduler() error {
	bin, err := binary("scheduler")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(s.dir, "scheduler.kubeconfig")
	// The admin token over loopback; the server's certificate is this run's self-signed one.
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
`, s.URL, s.token)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		return err
	}
	// No serving port (--secure-port=0) and no leader election: one scheduler, for one test run.
	return s.run("kube-scheduler", bin, "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1")
}

// Binding is where the scheduler put a pod: its node, or why it could not place it.
type Binding struct {
	Node   string
	Reason string // the PodScheduled condition's message while unbound
}

// WaitBound waits until the scheduler has decided every named pod of the namespace, or the
// timeout passes, and returns each pod's binding (unbound pods carry the scheduler's reason). A
// pod is decided when bound, or when the scheduler found no place for it among all the cluster's
// nodes (its message counts them: an earlier attempt may have seen fewer).
func (s *Server) WaitBound(namespace string, pods []string, nodes int, timeout time.Duration) (map[string]Binding, error) {
	settled := fmt.Sprintf("0/%d nodes are available", nodes)
	deadline := time.Now().Add(timeout)
	for {
		out := map[string]Binding{}
		decided := 0
		for _, name := range pods {
			code, body, err := s.do("GET", "/api/v1/namespaces/"+namespace+"/pods/"+name, nil)
			if err != nil {
				return nil, err
			}
			if code != http.StatusOK {
				return nil, fmt.Errorf("GET pod %s/%s: %d %s", namespace, name, code, body)
			}
			var pod struct {
				Spec   struct{ NodeName string }
				Status struct {
					Conditions []struct{ Type, Status, Message string }
				}
			}
			if err := json.Unmarshal(body, &pod); err != nil {
				return nil, err
			}
			b := Binding{Node: pod.Spec.NodeName}
			for _, c := range pod.Status.Conditions {
				if c.Type == "PodScheduled" && c.Status != "True" {
					b.Reason = c.Message
				}
			}
			if b.Node != "" || strings.HasPrefix(b.Reason, settled) {
				decided++
			}
			out[name] = b
		}
		if decided == len(pods) || time.Now().After(deadline) {
			return out, nil
		}
		for _, p := range s.procs {
			select {
			case <-p.done:
				return nil, fmt.Errorf("%s exited (%v)\n--- log:\n%s", p.name, p.err, s.logTail(p.name))
			default:
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// notReadyTaint is what the API server's TaintNodesByCondition admission puts on every new
// Node; the node lifecycle controller lifts it once the kubelet reports Ready.
const notReadyTaint = "node.kubernetes.io/not-ready"

// CreateReadyNode registers a Node as a kubelet would (labels, taints, capacity and allocatable
// in the object), then does what the node lifecycle controller does once that kubelet reports
// Ready: it lifts the not-ready taint the API server added. The harness has neither kubelet nor
// controller manager; everything else about the node is the object given.
func (s *Server) CreateReadyNode(node map[string]any) error {
	if err := s.Create(node); err != nil {
		return err
	}
	got, err := s.Get(node)
	if err != nil {
		return err
	}
	spec, _ := got["spec"].(map[string]any)
	if spec != nil {
		var kept []any
		taints, _ := spec["taints"].([]any)
		for _, t := range taints {
			if m, _ := t.(map[string]any); m["key"] != notReadyTaint {
				kept = append(kept, t)
			}
		}
		spec["taints"] = kept
	}
	return s.Update(got)
}

// Update replaces an object (PUT) with strict field validation.
func (s *Server) Update(obj map[string]any) error {
	path, err := s.collectionPath(obj)
	if err != nil {
		return err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	code, resp, err := s.do("PUT", path+"/"+name(obj)+"?fieldValidation=Strict", body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return &RejectedError{Code: code, Kind: fmt.Sprint(obj["kind"]), Name: name(obj), Message: string(resp)}
	}
	return nil
}

// DeleteNow deletes an object without a grace period: a pod bound to a node otherwise waits for
// its kubelet, which the harness does not run.
func (s *Server) DeleteNow(obj map[string]any) error {
	path, err := s.collectionPath(obj)
	if err != nil {
		return err
	}
	code, body, err := s.do("DELETE", path+"/"+name(obj), []byte(`{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}`))
	if err != nil {
		return err
	}
	if code != http.StatusOK && code != http.StatusAccepted {
		return fmt.Errorf("DELETE %s/%s: %d %s", path, name(obj), code, body)
	}
	return nil
}
