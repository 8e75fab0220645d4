package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestProfilesListsEveryBuiltin(t *testing.T) {
	code, out, errOut := runCLI("profiles")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range topology.BuiltinProfileNames() {
		if !strings.Contains(out, "\n"+name+" ") {
			t.Errorf("profiles table lacks %s:\n%s", name, out)
		}
	}
}

func TestProfileJSONIsTheDocumentedSpec(t *testing.T) {
	code, out, errOut := runCLI("profile", "p5-efa", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var spec struct {
		Name    string `json:"name"`
		Network struct {
			Interfaces []map[string]any `json:"networkInterfaces"`
		} `json:"network"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	if spec.Name != "p5-efa" || len(spec.Network.Interfaces) != 33 {
		t.Fatalf("name %q, %d interfaces", spec.Name, len(spec.Network.Interfaces))
	}
	want := map[string]any{"networkCardIndex": 31.0, "deviceIndex": 0.0, "interfaceType": "efa-only", "associatePublicIpAddress": false, "deleteOnTermination": true}
	last := spec.Network.Interfaces[32]
	for k, v := range want {
		if last[k] != v {
			t.Errorf("interface 32 %s = %v, want %v (%v)", k, last[k], v, last)
		}
	}
	// Flags may also stand before the name; two runs give the same bytes.
	if _, again, _ := runCLI("profile", "--json", "p5-efa"); again != out {
		t.Error("profile --json is not deterministic or flag order matters")
	}
}

func TestProfileTextNamesTheDecisions(t *testing.T) {
	code, out, _ := runCLI("profile", "p4d-pod-per-gpu")
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{"card 0: interface@0 efa-only@1; cards 1-3: efa-only@0", "4 pod(s)/node x 1 GPU x 1 EFA",
		"idle-gpus", "pod-per-gpu-on-nvswitch", "fabric mgr     host"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestUsageAndUnknowns(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"profile"}, 2, "usage: gpucluster profile NAME"},
		{[]string{"profile", "p6"}, 2, "profiles: dev, g6e-efa"},
		{[]string{"profiles", "extra"}, 2, "usage: gpucluster profiles"},
		{[]string{"validate"}, 2, "usage: gpucluster validate FILE"},
		{[]string{"profile", "dev", "--yaml"}, 2, "unknown flag --yaml"},
		// Refused before any cluster is read.
		{[]string{"bench", "run", "--stack", "p5-efa", "--poll", "0s"}, 2, "--poll 0s: give how often to read the job's state"},
		{[]string{"health", "--stack", "p5-efa", "--poll", "-1s"}, 2, "--poll -1s: give how often to read the checks' jobs"},
		{[]string{"bench", "run", "--stack", "p5-efa", "--timeout", "-1s"}, 2, "--timeout -1s: give how long the job may take"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if code, out, _ := runCLI("help"); code != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("help: %d %q", code, out)
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "Pulumi.good.yaml")
	bad := filepath.Join(dir, "Pulumi.bad.yaml")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(good, "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: a, profile: p5-efa}\n    - {name: b, profile: g6e-ena}\n")
	write(bad, "config:\n  gpucluster:pools:\n    - name: a\n      profile: p4d-efa\n      efaInterfaces: 9\n      shmsize: 1Gi\n  aws:region: us-east-1\n")

	code, out, errOut := runCLI("validate", good)
	if code != 0 || !strings.Contains(out, "valid") || !strings.Contains(out, "pool b (profile g6e-ena)") ||
		!strings.Contains(out, "region     us-east-1") || !strings.Contains(out, "pool       b: 4 × g6e.12xlarge") ||
		!strings.Contains(out, "/h after pulumi up") || !strings.Contains(out, "expiry     none") {
		t.Errorf("good: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI("validate", good, "--json")
	var spec topology.StackSpec
	if code != 0 || json.Unmarshal([]byte(out), &spec) != nil || len(spec.Pools) != 2 || spec.Source != good {
		t.Errorf("good --json: exit %d\n%s", code, out)
	}
	code, out, errOut = runCLI("validate", bad)
	for _, want := range []string{"is invalid: 2 error(s)", bad + ":5: gpucluster:pools[0].efaInterfaces:",
		bad + `:6: gpucluster:pools[0].shmsize: unknown key (did you mean "shmSize"?); fix:`} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("bad: exit %d, want %q in stderr:\n%s", code, want, errOut)
		}
	}
	if out != "" {
		t.Errorf("nothing goes to stdout for an invalid file: %q", out)
	}
}

// TestHelpListsEveryCommand: --help names every command and every bench and experiment
// subcommand that exists, and no command that does not.
func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runCLI("--help")
	if code != exitOK {
		t.Fatalf("--help exits %d", code)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  gpucluster (\w+)(?: ([a-z]+)\b)?`).FindAllStringSubmatch(out, -1) {
		listed[strings.TrimSpace(m[1]+" "+m[2])] = true
	}
	want := map[string]bool{}
	subcommands := map[string][]string{"bench": benchSubcommands, "experiment": experimentSubcommands}
	for name := range commands {
		if subcommands[name] == nil {
			want[name] = true
		}
	}
	for name, subs := range subcommands {
		for _, sub := range subs {
			want[name+" "+sub] = true
		}
	}
	for name := range want {
		if !listed[name] {
			t.Errorf("--help does not list gpucluster %s", name)
		}
	}
	for name := range listed {
		if !want[name] {
			t.Errorf("--help lists gpucluster %s, which is no command", name)
		}
	}
}
