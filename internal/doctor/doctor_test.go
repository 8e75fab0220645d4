package doctor

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

func parseFile(t *testing.T, name string) *Log {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func topoFile(t *testing.T, name string) *Topo {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	topo, err := ParseTopo(f)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func profile(t *testing.T, name string) *topology.PoolSpec {
	t.Helper()
	p, _ := topology.BuiltinProfile(name)
	s, err := topology.Derive(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func codes(r *Report) string {
	var cs []string
	for _, f := range r.Findings {
		cs = append(cs, f.Code)
	}
	return strings.Join(cs, ",")
}

func TestCommunicatorsAndTransports(t *testing.T) {
	cases := []struct {
		log                        string
		version, plugin, network   string
		ranks, nodes, local, chans int
		intra, inter, findings     string
	}{
		{"p5-efa.log", "2.23.4+cuda12.6", "Libfabric", "Libfabric", 16, 2, 8, 32,
			topology.TransportP2P, topology.TransportNetLibfabricGDR, ""},
		{"g6e-ena-fallback.log", "2.21.5+cuda12.4", "AWS Libfabric", "Socket", 16, 4, 4, 2,
			topology.TransportSHM, topology.TransportNetSocket, "net-plugin-fallback"},
		{"p4d-pod-per-gpu.log", "2.18.5+cuda12.2", "AWS Libfabric", "AWS Libfabric", 4, 4, 1, 4,
			topology.TransportNone, topology.TransportNetLibfabricGDR, "one-gpu-per-pod"},
	}
	for _, c := range cases {
		t.Run(c.log, func(t *testing.T) {
			r := Diagnose(parseFile(t, c.log), nil, nil, "")
			if r.NCCLVersion != c.version || r.NetPlugin != c.plugin || r.Network != c.network {
				t.Errorf("version %q plugin %q network %q", r.NCCLVersion, r.NetPlugin, r.Network)
			}
			if len(r.Communicators) != 1 {
				t.Fatalf("%d communicators", len(r.Communicators))
			}
			cm := r.Communicators[0]
			if cm.Ranks != c.ranks || cm.Nodes != c.nodes || cm.LocalRanks != c.local || cm.Channels != c.chans ||
				cm.IntraNode != c.intra || cm.InterNode != c.inter {
				t.Errorf("communicator %+v", cm)
			}
			// Every peer connection is listed with its transport; the summary agrees with them.
			peers := 0
			for _, p := range cm.Peers {
				peers += p.Channels
				if p.Class == "" || p.Transport == "" || (p.Where != "intra-node" && p.Where != "inter-node") {
					t.Errorf("peer %+v", p)
				}
			}
			conns := 0
			for _, conn := range cm.Connections {
				conns += conn.Count
			}
			if peers != conns || len(cm.Peers) == 0 {
				t.Errorf("%d peer channels, %d connections", peers, conns)
			}
			if got := codes(r); got != c.findings {
				t.Errorf("findings %q, want %q", got, c.findings)
			}
		})
	}
}

func TestSignatures(t *testing.T) {
	cases := map[string][]string{
		"env-overrides.log":       {"p2p-restricted", "slow-bootstrap", "nccl-proto-forced"},
		"unreachable.log":         {"efa-unreachable"},
		"fabric-manager-down.log": {"fabric-manager-down"},
		"g6e-ena-fallback.log":    {"net-plugin-fallback"},
		"p4d-pod-per-gpu.log":     {"one-gpu-per-pod"},
	}
	for file, want := range cases {
		r := Diagnose(parseFile(t, file), nil, nil, "")
		for _, code := range want {
			found := false
			for _, f := range r.Findings {
				if f.Code == code {
					found = true
					if f.Evidence == "" || f.Cause == "" || f.Fix == "" {
						t.Errorf("%s: %s lacks evidence, cause or fix", file, code)
					}
				}
			}
			if !found {
				t.Errorf("%s: no %s in %s", file, code, codes(r))
			}
		}
	}
	// P2P blocked: SHM inside while the matrix allows P2P.
	r := Diagnose(parseFile(t, "env-overrides.log"), topoFile(t, "p5-topo.txt"), nil, "")
	if !strings.Contains(codes(r), "p2p-blocked") {
		t.Errorf("SHM on an NVLink machine is not reported: %s", codes(r))
	}
	// One GPU per pod names NVLink when the node has NVSwitch.
	r = Diagnose(parseFile(t, "p4d-pod-per-gpu.log"), nil, profile(t, "p4d-pod-per-gpu"), "profile p4d-pod-per-gpu")
	if !strings.Contains(r.Findings[0].Cause, "instead of NVLink") {
		t.Errorf("cause %q", r.Findings[0].Cause)
	}
}

func TestTopologyMatrices(t *testing.T) {
	p5 := topoFile(t, "p5-topo.txt")
	if len(p5.GPUs) != 8 || p5.Pairs != 28 || p5.P2PPairs != 28 || !p5.NVLink() || p5.CPU["GPU5"] != "48-95" || p5.NUMA["GPU5"] != "1" {
		t.Errorf("p5: %s cpu %v numa %v", p5.Summary(), p5.CPU, p5.NUMA)
	}
	g6e := topoFile(t, "g6e12-topo.txt")
	if g6e.Pairs != 6 || g6e.P2PPairs != 0 || g6e.NVLink() || g6e.Links["GPU0-GPU1"] != "NODE" || g6e.Links["GPU1-GPU2"] != "SYS" {
		t.Errorf("g6e: %s %v", g6e.Summary(), g6e.Links)
	}
	if _, err := ParseTopo(strings.NewReader("not a matrix\n")); err == nil {
		t.Error("a file without GPU rows must be refused")
	}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		log, profile string
		match        bool
		change       string
	}{
		{"p5-efa.log", "p5-efa", true, ""},
		{"g6e-ena-fallback.log", "g6e-ena", true, ""},
		{"g6e-ena-fallback.log", "g6e-efa", false, "fell back to TCP sockets"},
		{"p4d-pod-per-gpu.log", "p4d-pod-per-gpu", true, ""},
		// One rank per NCCL node on a pod-per-node profile of an 8-GPU type: the pods split the
		// node, so NVLink goes unused.
		{"p4d-pod-per-gpu.log", "p4d-efa", false, "NCCL found 1 rank per node, where profile p4d-efa puts 8 GPUs in one pod"},
	}
	for _, c := range cases {
		r := Diagnose(parseFile(t, c.log), nil, profile(t, c.profile), "profile "+c.profile)
		v := r.Verdict
		if v == nil || v.Match != c.match || (c.change != "" && !strings.Contains(strings.Join(v.Changes, " "), c.change)) {
			t.Errorf("%s vs %s: %+v", c.log, c.profile, v)
		}
	}
}

func TestBadInput(t *testing.T) {
	cases := map[string]string{
		"":                               "empty",
		"\x00\x01\x02\xff\xfe\n\x00\x00": "binary",
		"hello\nworld\n":                 "no NCCL output",
	}
	for in, want := range cases {
		_, err := Parse(strings.NewReader(in))
		var bad ErrNotNCCL
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"p4d-pod-per-gpu.log", "env-overrides.log", "unreachable.log", "fabric-manager-down.log"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/Socket/0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(strings.NewReader(string(data)))
		if err != nil {
			var bad ErrNotNCCL
			if !errors.As(err, &bad) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		r := Diagnose(l, nil, nil, "")
		for _, c := range r.Communicators {
			if c.Ranks < 0 || c.Channels < 0 {
				t.Fatalf("negative counts %+v", c)
			}
		}
	})
}

// TestNoConnectionLinesIsUnknownNotNone: a log cut after the communicator's Init (a job that
// hung while connecting, a paste that stops early; the shape of NVIDIA/nccl issue logs that end at
// "Init START") says nothing of the transports: "unknown", and a verdict asked for is unknown, not
// a match or a mismatch. JSON lists are empty, never null.
func TestNoConnectionLinesIsUnknownNotNone(t *testing.T) {
	r := Diagnose(parseFile(t, "cut-after-init.log"), nil, profile(t, "p5-efa"), "profile p5-efa")
	c := r.Communicators[0]
	if c.IntraNode != topology.TransportUnknown || c.InterNode != topology.TransportUnknown {
		t.Errorf("intra %q, inter %q: want unknown for both", c.IntraNode, c.InterNode)
	}
	if r.Verdict.Status != VerdictUnknown || !strings.Contains(r.Verdict.Reason, "no intra-node connection line") {
		t.Errorf("verdict %+v", r.Verdict)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") {
		t.Errorf("JSON holds null: %s", b)
	}
}

// TestTracebackOnly: a job's traceback with no INFO line is read, not refused: its NCCL error,
// the detail after "Last error:" without the launcher's label, and what it means.
func TestTracebackOnly(t *testing.T) {
	l := parseFile(t, "corpus/33-dle-1386-shm-segment-traceback.log")
	f := l.Failures
	if f.Result != "ncclSystemError" || f.Shm != "/dev/shm/nccl-Qx81Lb" || f.ShmSize != "5767520" ||
		f.LastError != "Error while creating shared memory segment /dev/shm/nccl-Qx81Lb (size 5767520)" || l.Version != "2.20.5" {
		t.Errorf("failures %+v, version %q", f, l.Version)
	}
	r := Diagnose(l, nil, nil, "")
	// No "No space left on device" line: the segment failed, and why is not in the log.
	if len(r.Findings) != 1 || r.Findings[0].Code != "shm-segment-failed" || !strings.Contains(r.Findings[0].Fix, "medium: Memory") {
		t.Errorf("findings %+v", r.Findings)
	}
}

// TestUserTrials are what a new user tried (issue 19): a 4-GPU host's topology against a p5
// stack is a mismatch said as such, not a match; a plugin that found its EFA devices and then
// failed is not blamed on a pod without EFA devices.
func TestUserTrials(t *testing.T) {
	r := Diagnose(parseFile(t, "p5-efa.log"), topoFile(t, "g6e12-topo.txt"), profile(t, "p5-efa"), "profile p5-efa")
	if r.Verdict.Status != VerdictMismatch || !strings.Contains(strings.Join(r.Verdict.Changes, " "), "host with 4 GPUs") {
		t.Errorf("a g6e.12xlarge topology against p5: %+v", r.Verdict)
	}
	r = Diagnose(parseFile(t, "corpus/04-aws-ofi-nccl-889-plugin-init-failed.log"), nil, nil, "")
	var cause string
	for _, f := range r.Findings {
		if f.Code == "net-plugin-fallback" {
			cause = f.Cause
		}
	}
	if !strings.Contains(cause, "found 4 EFA device(s)") || strings.Contains(cause, "no EFA device") {
		t.Errorf("plugin-init failure with 4 EFA NICs found: cause %q", cause)
	}
}

// TestSocketBetweenRanksOfOneHost: two ranks of one host (mpirun on a bare machine, the same
// hostname) connected over NET/Socket are intra-node traffic over TCP, a finding of its own;
// the transport's name does not make them inter-node.
func TestSocketBetweenRanksOfOneHost(t *testing.T) {
	r := Diagnose(parseFile(t, "same-host-socket.log"), nil, nil, "")
	c := r.Communicators[0]
	if c.IntraNode != topology.TransportNetSocket || c.InterNode != topology.TransportNone {
		t.Errorf("intra %q, inter %q: want net-socket within the node, none between nodes", c.IntraNode, c.InterNode)
	}
	found := false
	for _, f := range r.Findings {
		found = found || f.Code == "network-within-node"
	}
	if !found {
		t.Errorf("no network-within-node finding: %+v", r.Findings)
	}
}

// TestFallbackEvidenceQuotesTheSocketLine: a fallback whose "NET/Socket : Using" line is in the
// log says so, not "(not logged)", even without a "Using network" line.
func TestFallbackEvidenceQuotesTheSocketLine(t *testing.T) {
	log := "h1:10:10 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" +
		"h1:10:30 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.7.4-aws\n" +
		"h1:10:30 [0] ofi_init:1355 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n" +
		"h1:10:30 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0>\n"
	l, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	r := Diagnose(l, nil, nil, "")
	if len(r.Findings) == 0 || !strings.Contains(r.Findings[0].Evidence, "NET/Socket : Using [0]eth0:10.1.2.3<0>") {
		t.Errorf("findings %+v", r.Findings)
	}
}

// Mutation guards: each input reaches one guard alone, so removing the guard fails the test.
func TestGuardsReachedAlone(t *testing.T) {
	parse := func(log string) *Log {
		l, err := Parse(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// NCCL_P2P_LEVEL set by aws-ofi-nccl itself (NCCL then reports it "set by environment"): not
	// the user's restriction. The same value set by the user would be.
	plugin := "h:1:1 [0] NCCL INFO NET/OFI Setting NCCL_P2P_LEVEL environment variable to PHB\n" +
		"h:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB\n"
	for _, f := range Diagnose(parse(plugin), nil, nil, "").Findings {
		if f.Code == "p2p-restricted" {
			t.Errorf("a variable the plugin set blamed on the user: %+v", f)
		}
	}
	user := "h:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB\n"
	found := false
	for _, f := range Diagnose(parse(user), nil, nil, "").Findings {
		found = found || f.Code == "p2p-restricted"
	}
	if !found {
		t.Error("the user's NCCL_P2P_LEVEL is not reported")
	}

	// localRanks 4 on a p5 (8 GPUs in one pod): a mismatch of its own kind, not the 1-rank one.
	four := "h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 8 cudaDev 0 busId 18000 commId 0xab - Init START\n" +
		"h:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n" +
		"h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
	v := Diagnose(parse(four), nil, profile(t, "p5-efa"), "profile p5-efa").Verdict
	if v.Status != VerdictMismatch || !strings.Contains(strings.Join(v.Changes, " "), "NCCL found 4 ranks per node") {
		t.Errorf("localRanks 4 on p5: %+v", v)
	}

	// The absolute slow-bootstrap threshold alone: 12 s of a 40 s init (the relative clause,
	// bootstrap over half the init, does not hold).
	slow := "h:1:2 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 8 total 40.00 (kernels 0.10, alloc 0.10, bootstrap 12.00, allgathers 0.10, topo 0.10, graphs 0.00, connections 27.60, rest 0.00)\n"
	found = false
	for _, f := range Diagnose(parse(slow), nil, nil, "").Findings {
		found = found || f.Code == "slow-bootstrap"
	}
	if !found {
		t.Error("a 12 s bootstrap (of 40 s) is not reported")
	}
}
