package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const benchData = "../../internal/bench/testdata/"

func TestBenchReportExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"pass", []string{"--log", benchData + "mpijob-p5-eks-excerpt.txt", "--profile", "p5-efa", "--test", "all_reduce_perf"}, 0, "verdict: pass"},
		// A table that does not name its test is judged by no figure: only all_reduce_perf has them.
		// --nodes gives the node count a log does not state (srun-p4de-2node has no rank lines).
		{"nodes given", []string{"--log", benchData + "srun-p4de-2node.txt", "--profile", "p4d-efa", "--test", "all_reduce_perf", "--nodes", "2"}, 3, "no published all_reduce_perf figure for 2 x p4d.24xlarge"},
		{"unnamed test", []string{"--log", benchData + "mpijob-p5-eks-excerpt.txt", "--profile", "p5-efa"}, 3, "does not name the test"},
		{"another test", []string{"--log", benchData + "mpijob-p5-eks-excerpt.txt", "--profile", "p5-efa", "--test", "sendrecv_perf"}, 3, "this is sendrecv_perf"},
		{"wrong results", []string{"--log", benchData + "wrong-results.txt", "--profile", "p5-efa"}, 1, "1024 wrong elements"},
		{"no figure for g6e", []string{"--log", benchData + "g6e-ena-exponent.txt", "--profile", "g6e-ena"}, 3, "no published all_reduce_perf figure"},
		{"nothing asked", []string{"--log", benchData + "g6e-ena-exponent.txt"}, 0, "transports unknown"},
		{"json input", []string{"--log", benchData + "all_reduce-p5.json", "--profile", "p5-efa"}, 0, "all_reduce_perf"},
		{"not nccl-tests", []string{"--log", "../../README.md"}, 4, "no nccl-tests table"},
		{"missing file", []string{"--log", "nope.txt"}, 4, "nope.txt"},
		{"unknown profile", []string{"--log", benchData + "wrong-results.txt", "--profile", "p9"}, 2, "no built-in profile \"p9\""},
		{"usage", []string{"--stack", "dev"}, 2, "usage: gpucluster bench report"},
		// The job's pods and the nodes say where it ran in the network; a pod on a node not given cannot be placed.
		{"network span", []string{"--log", benchData + "g6e-ena-exponent.txt", "--pods", benchData + "span-pods.json", "--pods", benchData + "span-nodes.json"}, 0,
			"network: 2 pods on 2 nodes under 1 layer-3 network node(s), 1 of layer 2, 1 of layer 1"},
		{"span without nodes", []string{"--log", benchData + "g6e-ena-exponent.txt", "--pods", benchData + "span-pods.json"}, 4, "add kubectl get nodes -o json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(append([]string{"bench", "report"}, tc.args...), &out, &errOut)
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.out, out.String(), errOut.String())
			}
		})
	}
}

// --json is the result file a comparison reads: it must carry what reproduces the run.
func TestBenchReportJSON(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"bench", "report", "--log", benchData + "kubectl-timestamps-nocheck.txt", "--profile", "p5-efa", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got []struct {
		InstanceType string `json:"instanceType"`
		Nodes        int    `json:"nodes"`
		Placement    string `json:"placement"`
		Version      string `json:"ncclTestsVersion"`
		Rows         []struct {
			Bytes int64 `json:"bytes"`
		} `json:"rows"`
		Verdict struct {
			Status string `json:"status"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].InstanceType != "p5.48xlarge" || got[0].Nodes != 2 || got[0].Placement != "cluster" ||
		got[0].Version != "2.19.6" || len(got[0].Rows) != 32 || got[0].Verdict.Status != "pass" {
		t.Fatalf("result %+v", got)
	}
}
