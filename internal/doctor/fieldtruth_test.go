package doctor

import (
	"strings"
	"testing"
)

// The misreads of field-truth round 4 (issue 52), each in the smallest log that shows it. The
// corpus holds a whole fixture per class, modelled on a public log.

func parseAndDiagnose(t *testing.T, log, profileName string) (*Log, *Report) {
	t.Helper()
	l, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var r *Report
	if profileName != "" {
		r = Diagnose(l, nil, profile(t, profileName), "profile "+profileName)
	} else {
		r = Diagnose(l, nil, nil, "")
	}
	return l, r
}

// Class 2: an MNNVL connection both of whose ranks logged from one host is within that host,
// though no comm line states the node count; a ring's order gives the channel count.
func TestWhereATransportRanIsRead(t *testing.T) {
	_, r := parseAndDiagnose(t, ""+
		"gb-a:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/MNNVL\n"+
		"gb-a:12:13 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/MNNVL\n", "")
	if c := r.Communicators[0]; len(c.Connections) != 1 || c.Connections[0].Where != "intra-node" {
		t.Errorf("P2P/MNNVL between ranks of one host: %+v, want one intra-node row", c.Connections)
	}
	_, r = parseAndDiagnose(t, ""+
		"gb-a:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 4[0] via P2P/MNNVL\n"+
		"gb-b:12:13 [0] NCCL INFO Channel 00/0 : 4[0] -> 0[0] via P2P/MNNVL\n", "")
	if c := r.Communicators[0]; len(c.Connections) != 1 || c.Connections[0].Where != "inter-node" {
		t.Errorf("P2P/MNNVL between two hosts: %+v, want one inter-node row", c.Connections)
	}
	for _, ring := range []struct {
		lines string
		want  int
	}{
		{"Channel 00/24 :    0   1\nh:1:1 [0] NCCL INFO Channel 01/24 :    0   1", 24}, // 2.12+: the count after the slash
		{"Channel 00 :    0   1\nh:1:1 [0] NCCL INFO Channel 03 :    0   1", 4},        // 2.7 to 2.11: the highest channel
	} {
		_, r := parseAndDiagnose(t, "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xab - Init START\n"+
			"h:1:1 [0] NCCL INFO "+ring.lines+"\n", "")
		if got := r.Communicators[0].Channels; got != ring.want {
			t.Errorf("rings %q: %d channels, want %d", ring.lines, got, ring.want)
		}
	}
}

// Class 3: two runs of one job in one file, their communicators logged without Init lines,
// stay two communicators, each with its own transport.
func TestTwoRunsInOneFileStayApart(t *testing.T) {
	run := func(pid, via string) string {
		return "a:" + pid + ":" + pid + " [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n" +
			"b:" + pid + ":" + pid + " [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n" +
			"a:" + pid + ":" + pid + " [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via " + via + "\n"
	}
	_, r := parseAndDiagnose(t, run("100", "NET/Socket/0")+run("200", "NET/Libfabric/0/GDRDMA"), "")
	if len(r.Communicators) != 2 {
		t.Fatalf("%d communicators, want one per run: %+v", len(r.Communicators), r.Communicators)
	}
	got := map[string]bool{}
	for _, c := range r.Communicators {
		got[c.InterNode] = true
	}
	if !got["net-socket"] || !got["net-libfabric-gdrdma"] {
		t.Errorf("inter-node classes %v, want the first run's socket and the second's Libfabric", got)
	}
}

// Class 4: a launcher's colour codes around a record and its repeat count are not part of
// the transport.
func TestColourCodesAreNotText(t *testing.T) {
	_, r := parseAndDiagnose(t, "\x1b[36m(RayTrainWorker pid=950, ip=10.0.0.1)\x1b[0m ray-w0:950:950 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\x1b[32m [repeated 23x across cluster]\x1b[0m\n", "")
	if c := r.Communicators[0]; len(c.Connections) != 1 || c.Connections[0].Transport != "P2P/IPC/read" {
		t.Errorf("connections %+v, want P2P/IPC/read alone", c.Connections)
	}
	if got := withoutColour("a\x1b[1;32mb\x1b[0mc\x1b"); got != "abc" {
		t.Errorf("withoutColour: %q", got)
	}
}

// Class 7: NCCL 2.5 names its socket network only by the transport that started; the external
// IB plugin named only by its connections is that plugin, not unknown.
func TestOldNetworksAreRead(t *testing.T) {
	_, r := parseAndDiagnose(t, ""+
		"h:1:1 [0] NCCL INFO NCCL version 2.5.6+cuda10.1\n"+
		"h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"+
		"h:1:1 [0] NCCL INFO NET/IB : No device found.\n"+
		"h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n", "")
	if r.Network != "Socket" || r.NetPlugin != "internal" || !strings.Contains(r.NetworkFrom, "No device found") {
		t.Errorf("network %q (from %q), plugin %q; want Socket from the IB and socket lines, internal", r.Network, r.NetworkFrom, r.NetPlugin)
	}
	_, r = parseAndDiagnose(t, "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IBext_v8/0/GDRDMA\n", "")
	if r.NetPlugin != "IBext_v8" {
		t.Errorf("plugin %q, want IBext_v8 from the connection's transport", r.NetPlugin)
	}
}

// Class 8: the record that started a chain is its evidence.
func TestTheFirstRecordOfAChainIsTheEvidence(t *testing.T) {
	_, r := parseAndDiagnose(t, ""+
		"h:1:1 [0] misc/shmutils.cc:58 NCCL WARN Call to posix_fallocate failed : No space left on device\n"+
		"h:1:1 [0] NCCL INFO misc/shmutils.cc:80 -> 2\n"+
		"h:1:1 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-1 (size 9637888)\n"+
		"h:1:1 [0] NCCL INFO transport/shm.cc:100 -> 2\n", "")
	if len(r.Findings) == 0 || r.Findings[0].Code != "shm-too-small" || !strings.HasPrefix(r.Findings[0].Evidence, "Call to posix_fallocate failed") {
		t.Errorf("findings %+v, want shm-too-small quoting the posix_fallocate line first", r.Findings)
	}
}

// Class 9: what aws-ofi-nccl set itself is not the user's, however it quotes it; a type the log
// names with one GPU is not one GPU per pod.
func TestBlameWhereThePluginIsToBlame(t *testing.T) {
	_, r := parseAndDiagnose(t, ""+
		"h:1:1 [0] NCCL INFO NET/OFI Setting NCCL_PROTO to \"simple\"\n"+
		"h:1:1 [0] NCCL INFO NCCL_PROTO set by environment to simple\n"+
		"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xab - Init START\n", "")
	if strings.Contains(codes(r), "nccl-proto-forced") {
		t.Errorf("findings %q: the plugin set NCCL_PROTO", codes(r))
	}
	_, r = parseAndDiagnose(t, ""+
		"a:1:1 [0] NCCL INFO NET/OFI NCCL_OFI_TUNER is not available for platform : g7e.8xlarge, Fall back to NCCL's tuner\n"+
		"a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xab - Init START\n"+
		"a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n", "g7e-efa")
	if strings.Contains(codes(r), "one-gpu-per-pod") {
		t.Errorf("findings %q: g7e.8xlarge has one GPU", codes(r))
	}
	if r.Verdict == nil || r.Verdict.Status != VerdictMismatch {
		t.Errorf("verdict %+v, want a mismatch: the log is of g7e.8xlarge, the profile of g7e.48xlarge", r.Verdict)
	}
}
