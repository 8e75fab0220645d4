package bench

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// The fixtures have the shape of kubectl get nodes|pods -o json (v1 Lists): three p5 nodes, two
// under one layer-3 network node and one under another, and an all-reduce's two workers.
func spanInputs(t *testing.T, extra map[string]string) map[string]io.Reader {
	t.Helper()
	in := map[string]io.Reader{}
	for _, f := range []string{"testdata/span-nodes.json", "testdata/span-pods.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in[f] = strings.NewReader(string(b))
	}
	for name, text := range extra {
		in[name] = strings.NewReader(text)
	}
	return in
}

func TestReadSpan(t *testing.T) {
	s, err := ReadSpan(spanInputs(t, nil))
	if err != nil || s.Pods != 2 || s.Nodes != 2 || !slices.Equal(s.NetworkNodes, []int{1, 1, 1}) {
		t.Fatalf("span %+v, %v", s, err)
	}
	if got := s.String(); got != "2 pods on 2 nodes under 1 layer-3 network node(s), 1 of layer 2, 1 of layer 1" {
		t.Errorf("%q", got)
	}
	// A third worker on the node under the other layer-3 network node: the run spans two.
	third := `{"kind":"Pod","metadata":{"name":"gpu-nccl-allreduce-worker-2"},"spec":{"nodeName":"ip-10-0-2-13.us-west-2.compute.internal"}}`
	if s, err = ReadSpan(spanInputs(t, map[string]string{"third.json": third})); err != nil || s.Nodes != 3 || !slices.Equal(s.NetworkNodes, []int{1, 1, 2}) {
		t.Errorf("span %+v, %v", s, err)
	}
}

// TestReadSpanCountsNodesNotPods: pod-per-GPU places several workers on one node; the span
// counts a node the pods share once.
func TestReadSpanCountsNodesNotPods(t *testing.T) {
	node := "ip-10-0-1-11.us-west-2.compute.internal"
	var pods []string
	for _, name := range []string{"w-0", "w-1", "w-2"} {
		pods = append(pods, `{"kind":"Pod","metadata":{"name":"`+name+`"},"spec":{"nodeName":"`+node+`"}}`)
	}
	in := map[string]io.Reader{
		"nodes.json": strings.NewReader(`{"kind":"List","items":[{"kind":"Node","metadata":{"name":"` + node + `","labels":{"x":"y"}}}]}`),
		"pods.json":  strings.NewReader(`{"kind":"List","items":[` + strings.Join(pods, ",") + `]}`),
	}
	s, err := ReadSpan(in)
	if err != nil || s.Pods != 3 || s.Nodes != 1 {
		t.Fatalf("three pods on one node: span %+v, %v; want 3 pods on 1 node", s, err)
	}
}

// TestReadSpanRefuses: each refusal says what is wrong with the input and how to mend it.
func TestReadSpanRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		in   map[string]io.Reader
		want string
	}{
		"no pods":      {map[string]io.Reader{"nodes.json": strings.NewReader(`{"kind":"List","items":[{"kind":"Node","metadata":{"name":"a"}}]}`)}, "no pod: give the job's pods"},
		"unknown node": {map[string]io.Reader{"pods.json": strings.NewReader(`{"kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"gone"}}`)}, "ran on node gone, which the input does not hold: add kubectl get nodes"},
		"unbound pod":  {map[string]io.Reader{"pods.json": strings.NewReader(`{"kind":"Pod","metadata":{"name":"p"},"spec":{}}`)}, "pod p is on no node: it never ran"},
		"not JSON":     {map[string]io.Reader{"log.txt": strings.NewReader("# nThread 1 nGpus 1")}, "log.txt: not kubectl's JSON"},
	} {
		if s, err := ReadSpan(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want an error saying %q", name, s, err, tc.want)
		}
	}
	// Nodes without network-node labels (a type EC2 reports no topology for): no layers.
	in := map[string]io.Reader{"all.json": strings.NewReader(`{"kind":"List","items":[{"kind":"Node","metadata":{"name":"a","labels":{"x":"y"}}},` +
		`{"kind":"Pod","metadata":{"name":"p"},"spec":{"nodeName":"a"}}]}`)}
	if s, err := ReadSpan(in); err != nil || len(s.NetworkNodes) != 0 || !strings.Contains(s.String(), "no network-node labels") {
		t.Errorf("%+v %v", s, err)
	}
}
