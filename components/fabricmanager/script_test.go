package fabricmanager

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The start script runs here as the DaemonSet's container runs it (sh -c, the same environment
// names), with stand-ins for what a GPU node and the stack's image have and this machine does
// not: nv-fabricmanager prints its version as the real one does ("Fabric Manager version is :
// 450.102.04", as a user's transcript of `nv-fabricmanager --version` shows it) and, when run with
// -c, records the configuration it was given; the node's driver is a file of the shape of
// /sys/module/nvidia/version (the version alone).

type startCase struct {
	imageVersion string // what the stand-in nv-fabricmanager prints; "" for no binary in the image
	nodeDriver   string // the node's module version; "" for no driver loaded
	noConfig     bool
}

// runStart runs the script and returns its exit code, the status file and the configuration
// nv-fabricmanager was started with ("" when it was not).
func runStart(t *testing.T, c startCase) (code int, status, ranWith string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if c.imageVersion != "" {
		stand := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"Fabric Manager version is : " + c.imageVersion + "\"; exit 0; fi\n" +
			"cat \"$2\" > \"$RAN_WITH\"\n"
		if err := os.WriteFile(filepath.Join(bin, "nv-fabricmanager"), []byte(stand), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "fabricmanager.cfg")
	if !c.noConfig {
		if err := os.WriteFile(config, []byte("LOG_LEVEL=4\nDAEMONIZE=1\nFM_CMD_PORT_NUMBER=6666\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	module := filepath.Join(dir, "version")
	if c.nodeDriver != "" {
		if err := os.WriteFile(module, []byte(c.nodeDriver+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	statusFile := filepath.Join(dir, "run", "gpucluster", "fabricmanager", "status")
	ranFile := filepath.Join(dir, "ran-with")
	cmd := exec.Command("sh", "-c", startScript)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "RAN_WITH=" + ranFile,
		"FM_STATUS=" + statusFile, "FM_CONFIG=" + config, "NODE_DRIVER_VERSION_FILE=" + module,
		"NVIDIA_DRIVER_VERSION=580.159.03", "FM_IMAGE=r.example/fm@sha256:0123"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	s, _ := os.ReadFile(statusFile)
	r, _ := os.ReadFile(ranFile)
	t.Logf("%+v: exit %d, status %q, output %s", c, code, s, out)
	return code, strings.TrimSpace(string(s)), string(r)
}

func TestStartRunsFabricManagerOnlyAtTheNodesDriver(t *testing.T) {
	code, status, ran := runStart(t, startCase{imageVersion: "580.159.03", nodeDriver: "580.159.03"})
	if code != 0 || status != "started nv-fabricmanager 580.159.03" {
		t.Errorf("exit %d, status %q", code, status)
	}
	// In the foreground, so the kubelet supervises it; the rest of the configuration kept.
	if ran != "LOG_LEVEL=4\nDAEMONIZE=0\nFM_CMD_PORT_NUMBER=6666\n" {
		t.Errorf("nv-fabricmanager ran with configuration %q", ran)
	}
}

func TestStartRefusesWithTheReasonTheGateReads(t *testing.T) {
	for _, c := range []struct {
		startCase
		status string
	}{
		{startCase{imageVersion: "570.195.03", nodeDriver: "580.159.03"},
			"fail the image r.example/fm@sha256:0123 holds nv-fabricmanager 570.195.03, and the stack's nvidiaDriverVersion is 580.159.03: build the image at the stack's driver"},
		{startCase{imageVersion: "580.159.03", nodeDriver: "580.126.09"},
			"fail the node's NVIDIA driver is 580.126.09, and the stack's nvidiaDriverVersion is 580.159.03: set it to the node image's driver and rebuild the fabric-manager image at it"},
		{startCase{imageVersion: "580.159.03"}, "fail no NVIDIA driver is loaded on the node ("},
		{startCase{nodeDriver: "580.159.03"}, "fail the image r.example/fm@sha256:0123 has no nv-fabricmanager on its PATH"},
		{startCase{imageVersion: "580.159.03", nodeDriver: "580.159.03", noConfig: true}, "fail the image r.example/fm@sha256:0123 has no "},
	} {
		code, status, ran := runStart(t, c.startCase)
		if code != 1 || !strings.HasPrefix(status, c.status) || ran != "" {
			t.Errorf("%+v: exit %d, status %q, ran %q; want exit 1, status %q, not started", c.startCase, code, status, ran, c.status)
		}
	}
}
