package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
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
		{"wrong results", []string{"--log", benchData + "wrong-results.txt", "--profile", "p5-efa"}, 1, "1 row(s) with wrong elements out-of-place, 256 MiB (first at line 13: 1024 at 256 MiB)"},
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
		// The EFA devices' own counters: flat ones fail the run whatever NCCL printed; the table
		// of what each node sent is shown.
		{"efa counters flat", []string{"--log", benchData + "efa-flat-sockets-p5.txt", "--profile", "p5-efa"}, 1, "the inter-node traffic did not cross EFA, whatever NCCL printed"},
		{"efa counters", []string{"--log", benchData + "efa-p5-2node.txt", "--profile", "p5-efa"}, 0,
			"ip-10-1-4-87.us-west-2.compute.internal           32  1535849520592  1535849520592          0        0         0            0"},
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

// TestBenchTestFlagFillsOnlyWhatTheLogLeavesOut: --test names the binary of a log that does not;
// a log whose launcher command line names its own keeps it, whatever --test says.
func TestBenchTestFlagFillsOnlyWhatTheLogLeavesOut(t *testing.T) {
	table := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"  2147483648     536870912     float     sum      -1   9100.1  235.99  235.99      0   9102.3  235.93  235.93      0\n"
	dir := t.TempDir()
	named := filepath.Join(dir, "named.txt")
	unnamed := filepath.Join(dir, "unnamed.txt")
	os.WriteFile(named, []byte("+ mpirun -np 16 --bind-to none /opt/nccl-tests/build/sendrecv_perf -b 8 -e 2G -f 2 -g 1\n"+table), 0o644)
	os.WriteFile(unnamed, []byte(table), 0o644)
	for file, want := range map[string]string{named: "sendrecv_perf", unnamed: "all_reduce_perf"} {
		code, out, errOut := runCLI("bench", "report", "--log", file, "--test", "all_reduce_perf", "-o", "json")
		var results []struct {
			Binary string `json:"binary"`
		}
		if err := json.Unmarshal([]byte(out), &results); err != nil || len(results) != 1 {
			t.Fatalf("%s: exit %d, %v: %s%s", filepath.Base(file), code, err, out, errOut)
		}
		if got := results[0].Binary; got != want {
			t.Errorf("%s with --test all_reduce_perf: binary %q, want %q", filepath.Base(file), got, want)
		}
	}
}

// TestAnInvalidStackFailsDoctorAndBench: a --stack whose file is invalid is the input failing
// (exit 1, with the file's errors), not a wrong command line (2), for doctor and bench alike.
func TestAnInvalidStackFailsDoctorAndBench(t *testing.T) {
	log, err := filepath.Abs("../../internal/doctor/testdata/p5-efa.log")
	if err != nil {
		t.Fatal(err)
	}
	root := copyProject(t)
	bad := "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: gpu, profile: no-such-profile}\n"
	if err := os.WriteFile(filepath.Join(root, "stacks", "Pulumi.broken.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"doctor", "--log", log, "--stack", "broken"}, {"bench", "report", "--log", log, "--stack", "broken"}} {
		code, _, errOut := runCLI(args...)
		if code != exitFail || !strings.Contains(errOut, "Pulumi.broken.yaml is invalid") || !strings.Contains(errOut, "no-such-profile") {
			t.Errorf("%v: exit %d, %q; want %d and the file's errors", args[:2], code, errOut, exitFail)
		}
	}
}

// TestBenchReportNamesTheTestAndPrintsCountsAsWritten: a table the command line names says so in
// its first line, and #wrong counts print as nccl-tests wrote them.
func TestBenchReportNamesTheTestAndPrintsCountsAsWritten(t *testing.T) {
	code, stdout, stderr := runCLI("bench", "report", "--log", "../../internal/bench/testdata/wrong-exponent-no-footer.txt")
	for _, want := range []string{"nccl-tests all_reduce_perf (named by the command line), line 6", ", 16 ranks", "1.04858e+06/0", "4 row(s) with wrong elements out-of-place"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s%s", want, stdout, stderr)
		}
	}
	if code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
	code, stdout, _ = runCLI("bench", "report", "--log", "../../internal/bench/testdata/alltoall-blank-redop-error.txt")
	// nccl-tests' footer counted 0 out-of-bounds values: the in-place error is said, not a failure.
	if code != exitOK || !strings.Contains(stdout, "err 0/err 1") || !strings.Contains(stdout, "256 ranks") || !strings.Contains(stdout, "not counted as wrong data") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
}

// trainingPodLogs writes what each training pod of a 4 x g6e.12xlarge run logs of its own
// node's EFA device (one each, topology.EFACounterLine, kubectl's timestamps), the device
// sending and receiving perNode bytes during the run: one file a pod, as bench run keeps them.
func trainingPodLogs(t *testing.T, perNode uint64) string {
	t.Helper()
	dir := t.TempDir()
	for i := range 4 {
		node := fmt.Sprintf("ip-10-1-4-%d.us-west-2.compute.internal", 20+i)
		at := func(phase string, tx uint64) string {
			return map[string]string{topology.EFAPhaseBefore: "2026-03-04T09:12:02.100000000Z ", topology.EFAPhaseAfter: "2026-03-04T09:53:10.200000000Z "}[phase] +
				topology.EFACounterLine(phase, node, "rdmap0s26", map[string]uint64{topology.EFATxBytes: tx, topology.EFARxBytes: tx}) + "\n"
		}
		log := at(topology.EFAPhaseBefore, 7_000_000) + at(topology.EFAPhaseAfter, 7_000_000+perNode)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("gpu-train-node-0-%d-x7k2p.log", i)), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBenchReportTrainingEFA: a training run's EFA readings are in every pod's log, given with
// --efa-counters; the run passes when each node's device carried traffic, and fails when the
// devices stayed flat (NCCL on TCP sockets), whatever NCCL printed. There is no need to hold
// the bytes to, as an all-reduce has: the floor is a MiB a node.
func TestBenchReportTrainingEFA(t *testing.T) {
	train := benchData + "train-g6e-efa-kubectl.txt"
	for _, tc := range []struct {
		name    string
		perNode uint64
		code    int
		want    []string
	}{
		{"carried", 3_180_000_000_000, exitOK, []string{"verdict: pass", "the 4 nodes' EFA devices sent 12.72 TB and received 12.72 TB",
			"ip-10-1-4-23.us-west-2.compute.internal            1  3180000000000  3180000000000"}},
		{"flat", 40_000, exitFail, []string{"verdict: fail", "the 4 nodes' EFA devices sent 160000 B in all: the inter-node traffic did not cross EFA, whatever NCCL printed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := run([]string{"bench", "report", "--log", train, "--profile", "g6e-efa", "--efa-counters", trainingPodLogs(t, tc.perNode)}, &out, &errOut)
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("lacks %q", want)
				}
			}
			if code != tc.code || t.Failed() {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
		})
	}
	// Without --efa-counters the training log alone holds no reading: nothing is judged by them.
	var out, errOut strings.Builder
	if code := run([]string{"bench", "report", "--log", train, "--profile", "g6e-efa"}, &out, &errOut); code != exitOK || strings.Contains(out.String(), "EFA counters") {
		t.Errorf("the training log alone: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if code := run([]string{"bench", "report", "--log", train, "--efa-counters", "-"}, &out, &errOut); code != exitUsage {
		t.Errorf("--efa-counters -: exit %d, want %d", code, exitUsage)
	}
}
