package kubeapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

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
		if err := s.exited(); err != nil {
			return nil, err
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
	return s.liftNotReadyTaint(node)
}

// liftNotReadyTaint does what the node lifecycle controller does once a node's kubelet reports
// Ready.
func (s *Server) liftNotReadyTaint(node map[string]any) error {
	return s.Modify(node, func(got map[string]any) {
		spec, _ := got["spec"].(map[string]any)
		if spec == nil {
			return
		}
		var kept []any
		taints, _ := spec["taints"].([]any)
		for _, t := range taints {
			if m, _ := t.(map[string]any); m["key"] != notReadyTaint {
				kept = append(kept, t)
			}
		}
		spec["taints"] = kept
	})
}

// Modify reads obj as the server has it, lets edit change it, and writes it back (PUT); like a
// controller (client-go's RetryOnConflict), it reads again and retries when the write meets a
// newer version (409), as it does when kwok updates a node it keeps alive. ModifyStatus writes
// the status subresource.
func (s *Server) Modify(obj map[string]any, edit func(map[string]any)) error {
	return s.modify(obj, edit, s.Update)
}

// ModifyStatus is Modify for the object's status (its kubelet's or controller's part).
func (s *Server) ModifyStatus(obj map[string]any, edit func(map[string]any)) error {
	return s.modify(obj, edit, s.UpdateStatus)
}

func (s *Server) modify(obj map[string]any, edit func(map[string]any), write func(map[string]any) error) error {
	for attempt := 1; ; attempt++ {
		got, err := s.Get(obj)
		if err != nil {
			return err
		}
		edit(got)
		err = write(got)
		var rejected *RejectedError
		if err == nil || !errors.As(err, &rejected) || rejected.Code != http.StatusConflict || attempt == 10 {
			return err
		}
	}
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
	if code != http.StatusOK && code != http.StatusAccepted && code != http.StatusNotFound { // gone already
		return fmt.Errorf("DELETE %s/%s: %d %s", path, name(obj), code, body)
	}
	return nil
}

// Pod is a pod as the tests see it: where it is bound, whether it is ready, and why it is
// not placed.
type Pod struct {
	Name, Node, Reason string
	Ready, Deleting    bool
}

// Pods lists the pods of a namespace that match a label selector ("" for all).
func (s *Server) Pods(namespace, selector string) ([]Pod, error) {
	path := "/api/v1/namespaces/" + namespace + "/pods"
	if selector != "" {
		path += "?labelSelector=" + url.QueryEscape(selector)
	}
	code, body, err := s.do("GET", path, nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, code, body)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string
				DeletionTimestamp string
			}
			Spec   struct{ NodeName string }
			Status struct {
				Conditions []struct{ Type, Status, Message string }
			}
		}
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	var out []Pod
	for _, it := range list.Items {
		p := Pod{Name: it.Metadata.Name, Node: it.Spec.NodeName, Deleting: it.Metadata.DeletionTimestamp != ""}
		for _, c := range it.Status.Conditions {
			switch {
			case c.Type == "PodScheduled" && c.Status != "True":
				p.Reason = c.Message
			case c.Type == "Ready" && c.Status == "True":
				p.Ready = true
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// WaitPods waits until n pods match the selector (controllers create them asynchronously) and
// the scheduler has decided each (see WaitBound), and returns them.
func (s *Server) WaitPods(namespace, selector string, n, nodes int, timeout time.Duration) ([]Pod, error) {
	deadline := time.Now().Add(timeout)
	for {
		pods, err := s.Pods(namespace, selector)
		if err != nil {
			return nil, err
		}
		if len(pods) >= n {
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			bound, err := s.WaitBound(namespace, names, nodes, time.Until(deadline))
			if err != nil {
				return nil, err
			}
			for i := range pods {
				pods[i].Node, pods[i].Reason = bound[pods[i].Name].Node, bound[pods[i].Name].Reason
			}
			return pods, nil
		}
		if time.Now().After(deadline) {
			return pods, fmt.Errorf("%d pod(s) match %q in %s after %s, want %d\n%s", len(pods), selector, namespace, timeout, n, s.ControllerLogs())
		}
		if err := s.exited(); err != nil {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// MarkPodReady does what the kubelet does once a pod's containers run and pass their probes:
// phase Running, Ready. The harness runs no kubelet; controllers waiting on readiness (the MPI
// operator's launcher waits for ready workers) then go on as in a cluster.
func (s *Server) MarkPodReady(namespace, name string) error {
	path := "/api/v1/namespaces/" + namespace + "/pods/" + name
	code, body, err := s.do("GET", path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, body)
	}
	var pod map[string]any
	if err := json.Unmarshal(body, &pod); err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	status, _ := pod["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		pod["status"] = status
	}
	status["phase"] = "Running"
	status["podIP"] = "10.1.0.10"
	status["conditions"] = []any{
		map[string]any{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
		map[string]any{"type": "Initialized", "status": "True", "lastTransitionTime": now},
		map[string]any{"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
		map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": now},
	}
	b, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	code, body, err = s.do("PUT", path+"/status", b)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("PUT %s/status: %d %s", path, code, body)
	}
	return nil
}

// exited reports a harness process that ended, with its log.
func (s *Server) exited() error {
	for _, p := range s.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v)\n--- log:\n%s", p.name, p.err, s.logTail(p.name))
		default:
		}
	}
	return nil
}

// ControllerLogs are the tails of the controllers' logs, for a test that waited in vain.
func (s *Server) ControllerLogs() string {
	var b strings.Builder
	for _, p := range s.procs {
		if p.name == "mpi-operator" || p.name == "kube-job-controller" || p.name == "kueue" || p.name == "trainer-controller-manager" || p.name == "compute-domain-controller" {
			fmt.Fprintf(&b, "--- %s log:\n%s\n", p.name, s.logTail(p.name))
		}
	}
	return b.String()
}

// DrainPods deletes every pod of a namespace that matches the selector ("" for all) at once,
// again and again until none is left for a second (controllers whose objects were just deleted
// may still create one). Pods held by a finalizer count as gone: the scheduler no longer places a
// pod being deleted.
func (s *Server) DrainPods(namespace, selector string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	quiet := 0
	for quiet < 5 {
		pods, err := s.Pods(namespace, selector)
		if err != nil {
			return err
		}
		live := 0
		for _, p := range pods {
			// A pod a controller deleted gracefully waits for a kubelet that never comes, and
			// holds its node's resources meanwhile: it goes now too.
			if !p.Deleting {
				live++
			}
			if err := s.DeleteNow(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": p.Name, "namespace": namespace}}); err != nil {
				return err
			}
		}
		if live == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods of %s still being created after %s", namespace, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// Node is a Node object as a kubelet on an x86-64 Linux instance registers it: the well-known
// labels every kubelet sets (hostname, os, arch), the given labels, taints (maps of key, value,
// effect) and the same capacity and allocatable. Charts select on the well-known labels
// (Karpenter's nodeSelector has kubernetes.io/os: linux).
func Node(name string, labels map[string]string, taints []map[string]any, allocatable map[string]string) map[string]any {
	l := map[string]any{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
	for k, v := range labels {
		l[k] = v
	}
	ts := []any{}
	for _, t := range taints {
		ts = append(ts, t)
	}
	res := map[string]any{}
	for k, v := range allocatable {
		res[k] = v
	}
	return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name, "labels": l},
		"spec": map[string]any{"taints": ts}, "status": map[string]any{"capacity": res, "allocatable": res,
			// What its kubelet reports once it runs: Kueue's topology-aware placement counts
			// only Ready nodes.
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "KubeletReady"}}}}
}

// SystemNodeAllocatable is what a system node (m7i.large: 2 vCPU, 8 GiB) offers pods once EKS's
// AMI has reserved its share for the kubelet and the system.
var SystemNodeAllocatable = map[string]string{"cpu": "1930m", "memory": "7000Mi", "pods": "29"}
