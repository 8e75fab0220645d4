package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionsAreReadAsTheToolsPrintThem(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"v3.259.0\n", "3.259.0"},
		{"go1.26.8\n", "1.26.8"},
		{"aws-cli/2.27.49 Python/3.13.4 Linux/6.1.0 exe/x86_64.debian.12\n", "2.27.49"},
		{"aws-cli/1.40.2 Python/3.11.7 Linux/6.1.0 botocore/1.38.3\n", "1.40.2"},
	} {
		if got, err := firstVersion([]byte(c.out)); err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.out, got, err, c.want)
		}
	}
	// kubectl version --client=true --output=json, as kubectl 1.34 prints it.
	got, err := kubectlVersion([]byte(`{"clientVersion":{"major":"1","minor":"34","gitVersion":"v1.34.1","goVersion":"go1.24.6","platform":"linux/amd64"},"kustomizeVersion":"v5.7.1"}`))
	if err != nil || got != "1.34.1" {
		t.Errorf("kubectl: got %q, %v", got, err)
	}
	if _, err := firstVersion([]byte("command not understood")); err == nil {
		t.Error("no version: want an error")
	}
}

func TestLessIsNumeric(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"1.9.0", "1.24.0", true}, {"1.24.0", "1.24.0", false}, {"1.32.4", "1.24.0", false}, {"2.6.9", "2.7.0", true}, {"3.259", "3.259.0", false}} {
		if Less(c.a, c.b) != c.less {
			t.Errorf("Less(%s, %s) = %v", c.a, c.b, !c.less)
		}
	}
}

// fakeTool puts a script named command on a PATH of its own, printing out (with the shell's
// builtin printf: nothing else is on that PATH).
func fakeTool(t *testing.T, command, out string) {
	dir := t.TempDir()
	script := "#!/bin/sh\nprintf '%s\\n' '" + out + "'\n"
	if err := os.WriteFile(filepath.Join(dir, command), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func tool(t *testing.T, command string) Tool {
	for _, tl := range Tools {
		if tl.Command == command {
			return tl
		}
	}
	t.Fatalf("no tool %s", command)
	return Tool{}
}

func TestCheckRefusesOldAndMissingTools(t *testing.T) {
	fakeTool(t, "kubectl", `{"clientVersion":{"gitVersion":"v1.23.17"}}`)
	r := tool(t, "kubectl").Check()
	if r.Err == nil || !strings.Contains(r.Err.Error(), "older than 1.24.0") || !strings.Contains(r.Err.Error(), "pulumi-eks") {
		t.Errorf("kubectl 1.23: %v", r.Err)
	}
	fakeTool(t, "aws", "aws-cli/1.30.0 Python/3.11")
	if r := tool(t, "aws").Check(); r.Err != nil {
		t.Errorf("aws CLI v1 1.30 meets pulumi-eks's v1 minimum 1.24.0: %v", r.Err)
	}
	fakeTool(t, "aws", "aws-cli/2.6.0 Python/3.11")
	if r := tool(t, "aws").Check(); r.Err == nil || !strings.Contains(r.Err.Error(), "older than 2.7.0") {
		t.Errorf("aws CLI 2.6.0: %v", r.Err)
	}
	t.Setenv("PATH", t.TempDir())
	if r := tool(t, "pulumi").Check(); r.Err == nil || !strings.Contains(r.Err.Error(), "not on PATH") || !strings.Contains(r.Err.Error(), "install") {
		t.Errorf("no pulumi: %v", r.Err)
	}
}
