package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreflight: every tool present and new enough exits 0; one too old exits 1 and says which,
// why and how to fix it. The tools are scripts printing what the real ones print.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	tools := map[string]string{
		"pulumi":  "v3.259.0",
		"go":      "go1.26.8",
		"kubectl": `{"clientVersion":{"gitVersion":"v1.34.1"}}`,
		"aws":     "aws-cli/2.27.49 Python/3.13.4 Linux/6.1.0",
	}
	write := func() {
		for name, out := range tools {
			script := "#!/bin/sh\nprintf '%s\\n' '" + out + "'\n"
			if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	write()
	t.Setenv("PATH", dir)
	var out, errOut bytes.Buffer
	if code := run([]string{"preflight"}, &out, &errOut); code != 0 {
		t.Fatalf("every tool present: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	tools["kubectl"] = `{"clientVersion":{"gitVersion":"v1.23.0"}}`
	write()
	out.Reset()
	if code := run([]string{"preflight"}, &out, &errOut); code != 1 {
		t.Fatalf("kubectl 1.23: exit %d, want 1\n%s", code, out.String())
	}
	for _, want := range []string{"kubectl 1.23.0 is older than 1.24.0", "pulumi-eks", "install kubectl", "1 of 4 tools"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("preflight output lacks %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"preflight", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
}
