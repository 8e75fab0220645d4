package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestEveryCommandHasHelp: --help (and -h) on every command prints its usage and flags on stdout
// and exits 0.
func TestEveryCommandHasHelp(t *testing.T) {
	lines := [][]string{{"bench", "report"}, {"bench", "compare"}, {"bench"}}
	for name := range commands {
		if name != "bench" {
			lines = append(lines, []string{name})
		}
	}
	for _, line := range lines {
		for _, help := range []string{"--help", "-h"} {
			code, out, errOut := runCLI(append(line, help)...)
			if code != exitOK || !strings.Contains(out, "usage: gpucluster "+line[0]) || errOut != "" {
				t.Errorf("%v %s: exit %d, stdout %q, stderr %q", line, help, code, out, errOut)
			}
		}
	}
}

// TestUsageErrorsSayWhatWasWrong: the command lines a new user gets wrong first, each answered
// with what was wrong and the command meant (exit 2).
func TestUsageErrorsSayWhatWasWrong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "p5-efa"}, "did you mean `gpucluster plan --stack p5-efa`?"},
		{[]string{"plan", "stacks/Pulumi.x.yaml"}, "did you mean `gpucluster plan --config stacks/Pulumi.x.yaml`?"},
		{[]string{"doctor", "job.log"}, "did you mean `gpucluster doctor --log job.log`?"},
		{[]string{"bench", "reprot"}, `no subcommand "reprot" (did you mean "report"?)`},
		{[]string{"doctr"}, `unknown command "doctr" (did you mean "doctor"?)`},
		{[]string{"expire", "--stack", "dev", "--in", "-1h"}, "the expiry must lie ahead"},
		{[]string{"expire", "--stack", "dev", "--in", "1w"}, "use minutes, hours or days"},
		{[]string{"expire", "--stack", "dev"}, "say when the GPU pools stop: --in 8h"},
		{[]string{"doctor", "--log", "x.log", "--stack", "dev", "--profile", "dev"}, "--stack and --profile both name what the job is compared with: give one"},
		{[]string{"bench", "report", "--log", "x.log", "--pool", "gpu"}, "--pool names a pool of a stack: give --stack too"},
		{[]string{"plan", "--stack", "p5efa"}, `no stack "p5efa" (did you mean "p5-efa"?)`},
		{[]string{"plan", "--stack", "stacks/Pulumi.dev.yaml"}, "--stack takes a stack's name, not a file: --stack dev, or --config stacks/Pulumi.dev.yaml"},
		{[]string{"doctor", "--log", "x.log", "--stack", "stacks/Pulumi.dev.yaml"}, "--stack takes a stack's name, not a file: --stack dev\n"},
		{[]string{"profile", "p5efa"}, `no built-in profile "p5efa" (did you mean "p5-efa"?)`},
		{[]string{"profile", "dev", "--jsn"}, `unknown flag --jsn (did you mean "json"?)`},
		{[]string{"profile", "dev", "-o", "xml"}, `-o "xml" is not an output format: use table, json, yaml`},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

func TestParseLifetime(t *testing.T) {
	for in, want := range map[string]time.Duration{"90m": 90 * time.Minute, "8h": 8 * time.Hour, "2d": 48 * time.Hour, "1d12h": 36 * time.Hour} {
		if got, err := parseLifetime(in); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0h", "-1h", "1d-2h", "1.5d", "d", "1w", "soon"} {
		if got, err := parseLifetime(in); err == nil {
			t.Errorf("%q: %v accepted", in, got)
		}
	}
}

// TestOutputFormats: -o json and -o yaml print the same fields; table is the default.
func TestOutputFormats(t *testing.T) {
	for _, line := range [][]string{{"profile", "p5-efa"}, {"profiles"}, {"validate", "../../stacks/Pulumi.dev.yaml"}} {
		code, asJSON, _ := runCLI(append(line, "-o", "json")...)
		code2, asYAML, _ := runCLI(append(line, "-o", "yaml")...)
		code3, legacy, _ := runCLI(append(line, "--json")...)
		var fromJSON, fromYAML any
		if code != 0 || code2 != 0 || code3 != 0 || yaml.Unmarshal([]byte(asJSON), &fromJSON) != nil || yaml.Unmarshal([]byte(asYAML), &fromYAML) != nil {
			t.Fatalf("%v: exits %d %d %d", line, code, code2, code3)
		}
		if asJSON != legacy {
			t.Errorf("%v: --json differs from -o json", line)
		}
		if strings.HasPrefix(asYAML, "{") || !strings.Contains(asYAML, "profile: ") {
			t.Errorf("%v: -o yaml is not YAML with the JSON's field names:\n%.300s", line, asYAML)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, line := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(line...)
		if code != 0 || !strings.HasPrefix(out, "gpucluster "+release) {
			t.Errorf("%v: exit %d %q", line, code, out)
		}
	}
}

// TestVersionIsTheChangelogsNewest: the version the CLI prints is CHANGELOG.md's newest entry.
func TestVersionIsTheChangelogsNewest(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## (\S+)`).FindStringSubmatch(string(b))
	if m == nil || m[1] != release {
		t.Errorf("CHANGELOG.md's newest entry is %v, the CLI says %s", m, release)
	}
}
