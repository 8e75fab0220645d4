package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/doctor"
)

const doctorData = "../../internal/doctor/testdata/"

func TestDoctorExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"doctor", "--log", doctorData + "p5-efa.log", "--profile", "p5-efa"}, 0, "verdict against profile p5-efa: MATCH"},
		{[]string{"doctor", "--log", doctorData + "p5-efa.log", "--stack", "p5-efa"}, 0, "verdict against stack p5-efa, pool gpu: MATCH"},
		{[]string{"doctor", "--log", doctorData + "g6e-ena-fallback.log", "--profile", "g6e-efa"}, 1, "MISMATCH"},
		{[]string{"doctor", "--log", doctorData + "g6e-ena-fallback.log", "--stack", "mixed", "--pool", "infer"}, 1, "verdict against stack mixed, pool infer: MISMATCH"},
		{[]string{"doctor", "--log", doctorData + "p5-efa.log", "--stack", "mixed", "--pool", "train"}, 0, "verdict against stack mixed, pool train: MATCH"},
		{[]string{"doctor", "--log", doctorData + "p5-efa.log", "--stack", "mixed", "--pool", "x"}, 2, "has no pool \"x\"; pools: train, infer"},
		{[]string{"doctor", "--log", doctorData + "p5-efa.log", "--pool", "x"}, 2, "usage: gpucluster doctor"},
		// An error finding fails, with no verdict asked for (CI gates on a job's log).
		{[]string{"doctor", "--log", doctorData + "unreachable.log"}, 1, "ERROR efa-unreachable"},
		{[]string{"doctor", "--log", doctorData + "fabric-manager-down.log"}, 1, "ERROR fabric-manager-down"},
		{[]string{"doctor", "--log", doctorData + "p5-topo.txt"}, 4, "no NCCL output"},
		{[]string{"doctor", "--log", "/nonexistent.log"}, 4, "no such file"},
		{[]string{"doctor"}, 2, "usage: gpucluster doctor"},
		{[]string{"doctor", "--log", doctorData + "p5-efa.log", "--profile", "p9"}, 2, "no built-in profile \"p9\""},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", c.args, code, c.code, c.want, stdout, stderr)
		}
	}
}

func TestDoctorReadsStdinAndWritesJSON(t *testing.T) {
	stdin = strings.NewReader("pod-a | h:1:2 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n" +
		"h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - Init START\n" +
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n")
	defer func() { stdin = nil }()
	code, stdout, stderr := runCLI("doctor", "--log", "-", "--json")
	var r doctor.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.NCCLVersion != "2.23.4+cuda12.6" || r.Communicators[0].IntraNode != "p2p" {
		t.Errorf("exit %d %s %s", code, stdout, stderr)
	}
}

func TestDoctorWithoutACommunicatorExits3(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cut.log")
	os.WriteFile(f, []byte("h1:55:60 [0] NCCL INFO NCCL version 2.23.4+cuda12.6\n"), 0o644)
	code, stdout, stderr := runCLI("doctor", "--log", f, "--profile", "p5-efa")
	if code != 3 || !strings.Contains(stdout, "verdict against profile p5-efa: UNKNOWN") || !strings.Contains(stdout, "reason: the log holds no communicator") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, _ := runCLI("doctor", "--log", f); code != 0 {
		t.Errorf("without a profile nothing is compared: exit %d", code)
	}
}

// TestDoctorReadsAJobOfSeveralLogs: every pod's log of one job, as a directory or repeated
// --log, is read as one job (ranks and nodes from all of them), and a finding names the pod log
// its evidence came from.
func TestDoctorReadsAJobOfSeveralLogs(t *testing.T) {
	dir := doctorData + "job-two-pods"
	for _, args := range [][]string{
		{"doctor", "--log", dir, "--json"},
		{"doctor", "--log", dir + "/worker-0.log", "--log", dir + "/worker-1.log", "--json"},
	} {
		var out, errOut strings.Builder
		code := run(args, &out, &errOut)
		var r doctor.Report
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		if code != exitFail || len(r.Sources) != 2 || len(r.Communicators) != 1 || r.Communicators[0].Nodes != 2 {
			t.Errorf("%v: exit %d, sources %v, communicators %+v", args, code, r.Sources, r.Communicators)
		}
		var unreachable *doctor.Finding
		for i := range r.Findings {
			if r.Findings[i].Code == "efa-unreachable" {
				unreachable = &r.Findings[i]
			}
		}
		if unreachable == nil || len(unreachable.Sources) != 1 || !strings.HasSuffix(unreachable.Sources[0], "worker-1.log") {
			t.Errorf("%v: the unreachable finding does not name worker-1.log: %+v", args, unreachable)
		}
	}
}

// TestDoctorExitsAsEveryCorpusLogSays runs the CLI over every corpus log (with the profile it
// names) and holds it to the exit its "# expect: exit=" line states: a log that holds a failure
// exits 1, whatever else it shows.
func TestDoctorExitsAsEveryCorpusLogSays(t *testing.T) {
	files, _ := filepath.Glob(doctorData + "corpus/*.log")
	if len(files) < 60 {
		t.Fatalf("%d corpus logs", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, profile := -1, ""
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "# expect: exit="); ok {
				want = int(v[0] - '0')
			}
			if v, ok := strings.CutPrefix(line, "# expect: profile="); ok {
				profile = v
			}
		}
		args := []string{"doctor", "--log", f}
		if profile != "" {
			args = append(args, "--profile", profile)
		}
		if code, stdout, stderr := runCLI(args...); code != want {
			t.Errorf("%s: exit %d, the fixture says %d\n%s%s", filepath.Base(f), code, want, stdout, stderr)
		}
	}
}
