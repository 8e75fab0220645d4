package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// fakeSys writes a sysfs tree as the EFA driver lays it out: per device, its port counters.
func fakeSys(t *testing.T, devices map[string]map[string]string) string {
	t.Helper()
	sys := t.TempDir()
	for dev, counters := range devices {
		dir := filepath.Join(sys, "class", "infiniband", dev, "ports", "1", "hw_counters")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range counters {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o444); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sys
}

// TestEFACounterScriptsRoundTrip runs the reader's loop and the worker's request as the job
// runs them (bash and sh), on a sysfs tree of our own, and reads their answers as bench report
// does: the readings of both phases, every counter the driver has, none it lacks.
func TestEFACounterScriptsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	counters := map[string]string{"tx_bytes": "1000", "rx_bytes": "2000", "retrans_pkts": "3", "retrans_timeout_events": "0",
		"unresponsive_remote_events": "0", "impaired_remote_conn_events": "0", "rdma_write_bytes": "77"}
	sys := fakeSys(t, map[string]map[string]string{"rdmap79s0": counters, "rdmap80s0": {"tx_bytes": "5", "rx_bytes": "6"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reader := exec.CommandContext(ctx, "bash", "-c", topology.EFACountersReaderScript())
	reader.Env = append(os.Environ(), "DIR="+dir, "SYS="+sys, "NODE_NAME=ip-10-1-4-21.ec2.internal")
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	defer reader.Wait()
	var log strings.Builder
	for _, phase := range []string{topology.EFAPhaseBefore, topology.EFAPhaseAfter} {
		if phase == topology.EFAPhaseAfter {
			os.WriteFile(filepath.Join(sys, "class/infiniband/rdmap79s0/ports/1/hw_counters/tx_bytes"), []byte("901000\n"), 0o644)
		}
		req := exec.Command("sh", "-c", topology.EFACountersRequestScript(), "request", phase)
		req.Env = append(os.Environ(), "DIR="+dir)
		out, err := req.Output()
		if err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			log.WriteString("[1,0]<stdout>:" + line + "\n") // as the launcher's mpirun tags it
		}
	}
	e, err := ParseEFACounters(strings.NewReader(log.String()))
	if err != nil || e == nil || len(e.Unread) > 0 {
		t.Fatalf("%v %v\n%s", e, err, log.String())
	}
	tr := e.Traffic()
	if len(tr.Nodes) != 1 || tr.Nodes[0].Node != "ip-10-1-4-21.ec2.internal" || tr.Nodes[0].Devices != 2 || tr.TxBytes != 900000 ||
		tr.RetransPkts == nil || *tr.RetransPkts != 0 || len(tr.Problems) > 0 {
		t.Errorf("traffic %+v\n%s", tr, log.String())
	}
	if strings.Contains(log.String(), "rdma_write_bytes") {
		t.Errorf("a counter the block does not carry was read:\n%s", log.String())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("requests or answers left behind: %v", left)
	}
	cancel()
}

// TestEFACounterRequestWithoutReader: a worker whose node runs no reader prints no reading,
// says so, and leaves no request behind.
func TestEFACounterRequestWithoutReader(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the request's ten seconds")
	}
	dir := t.TempDir()
	req := exec.Command("sh", "-c", topology.EFACountersRequestScript(), "request", topology.EFAPhaseBefore)
	req.Env = append(os.Environ(), "DIR="+dir)
	var stderr strings.Builder
	req.Stderr = &stderr
	out, err := req.Output()
	if err != nil || len(out) > 0 || !strings.Contains(stderr.String(), "no EFA counters reader answered") {
		t.Errorf("out %q, stderr %q, %v", out, stderr.String(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
