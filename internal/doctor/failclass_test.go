package doctor

import (
	"strconv"
	"strings"
	"testing"
)

// TestEveryFailureClass: each class is named by its own words, in every wording the classes
// were written from, and by nothing firmer than them.
func TestEveryFailureClass(t *testing.T) {
	cases := []struct{ text, want string }{
		{"Call to posix_fallocate failed : No space left on device", "shm-too-small"},
		{"Error: failed to extend /dev/shm/nccl-Wb4F2x to 9637892 bytes", "shm-too-small"},
		{"Error: failed to extend /dev/shm/nccl-aQ2c7T to 33030532 bytes, error: No space left on device (28)", "shm-too-small"},
		// The same call failing for another reason is not a full /dev/shm.
		{"Error: failed to extend /dev/shm/nccl-aQ2c7T to 33030532 bytes, error: Operation not permitted (1)", ""},
		{"Error while creating shared memory segment /dev/shm/nccl-Qx81Lb (size 5767520)", "shm-segment-failed"},
		{"Cuda failure 802 'system not yet initialized'", "fabric-manager-down"},
		{"Cuda failure 'out of memory'", "cuda-out-of-memory"},
		{"Cuda failure 2 'out of memory'", "cuda-out-of-memory"},
		{"Failed to CUDA calloc 6291456 bytes", "cuda-out-of-memory"},
		{"Cuda failure 'invalid argument'", "cuda-error"},
		{"NET/OFI Unable to register memory (type = 2) for device 4. RC: -22, Error: Invalid argument", "net-registration-failed"},
		{"NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129", "ib-completion-error"},
		{"NET/IB : Got completion from peer 10.0.0.2<4> with error 4, opcode 0, len 0, vendor err 81 (Send)", "ib-completion-error"},
		{"NET/IB: Got completion from peer 10.0.0.2<4> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129", "ib-completion-error"},
		{"NET/IB: Got CQE with error (devIndex=1, req=0x1, comm=0x2, wr_id=0x1, qp_num=4231)", "ib-completion-error"},
		{"NET/OFI Request 0x7f completed with error. RC: 113. Error: 2 (UNDELIVERABLE). Completed length: 0", "efa-completion-error"},
		{"NET/OFI Received FI_EHOSTUNREACH from peer", "efa-unreachable"},
		{"socketStartConnect: Connect to 10.0.2.15<47113> failed : Software caused connection abort", "socket-connect-failed"},
		{"bootstrap: connect to 10.0.2.15<47113> failed : Connection refused", "socket-connect-failed"},
		{"Call to connect failed : Connection timed out", "socket-connect-failed"},
		{"socketProgress: Connection closed by remote peer h<51022>", "nccl-remote-error"},
		{"Net : Call to recv from 10.1.0.12<48213> failed : Broken pipe", "nccl-remote-error"},
		{"socketProgressOpt: Call to recv from 10.0.0.3<5> failed : Connection reset by peer", "nccl-remote-error"},
		{"Error: network AWS Libfabric not found.", "nccl-net-unavailable"},
		{"Error: network Libfabric not found.", "nccl-net-unavailable"},
		{"Failed to initialize any NET plugin", "nccl-net-unavailable"},
		{"NET/OFI Creating new endpoint for domain 0x5581c0 failed: Invalid argument", "ofi-call-failed"},
		{"NET/OFI Couldn't open a fabric access domain. RC: -38, ERROR: Function not implemented", "ofi-call-failed"},
		{"NET/OFI aws-ofi-nccl initialization failed", ""}, // the plugin's start-up: net-plugin-fallback's
		// Failures no narrower class fits, and warnings that are not failures.
		{"Call to ibv_modify_qp failed with error Invalid argument", ""},
		{"[Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6", ""},
		{"NET/OFI GDR disabled on GDR-supported instance type p4d.24xlarge", ""},
	}
	for _, c := range cases {
		if got := classifyFailure(c.text); got != c.want {
			t.Errorf("%q: class %q, want %q", c.text, got, c.want)
		}
	}
	for code := range failureAdvice {
		// Classes read from a record's shape rather than a WARN's words: TestRecordsOutsideNCCL.
		found := code == "libfabric-efa-warning" || code == "libfabric-warning" || code == "process-crashed" || code == "collective-timeout" || code == "nccl-error"
		for _, c := range cases {
			found = found || c.want == code
		}
		if !found {
			t.Errorf("class %s has advice but no case here", code)
		}
	}
}

// TestChainsAndWarnings: a WARN is a failure when its words name a class or a return-code chain
// follows it in its thread; a WARN alone that names nothing stays a warning; a chain whose
// process a named failure explains adds nothing; a chain with no WARN before it is evidence
// itself; the net plugin's failure is NCCL moving on, not the job failing.
func TestChainsAndWarnings(t *testing.T) {
	cases := []struct{ name, log, codes, warnings string }{
		{"warn alone", "h:1:2 [0] init.cc:10 NCCL WARN Missing \"iommu=pt\" from kernel command line\nh:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n", "", "1"},
		{"warn then chain", "h:1:2 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument\nh:1:2 [0] NCCL INFO transport/net_ib.cc:536 -> 2\nh:1:2 [0] NCCL INFO init.cc:1 -> 2\n", "nccl-error", "0"},
		{"chain of 6", "h:1:2 [0] proxy.cc:1 NCCL WARN something odd\nh:1:2 [0] NCCL INFO proxy.cc:991 -> 6\n", "nccl-remote-error", "0"},
		{"chain of 7 is a call in progress", "h:1:2 [0] NCCL INFO group.cc:1 -> 7\n", "", "0"},
		{"chain without warn", "h:1:3 [0] NCCL INFO group.cc:65 -> 3 [Async thread]\n", "nccl-error", "0"},
		{"2.30.7 chain", "h:1:2 [0] NCCL INFO transport/net.cc:1205 (recvProxyProgress) -> 8\n", "nccl-error", "0"},
		{"named failure explains its process's chain", "h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer x<1>\nh:1:3 [0] NCCL INFO group.cc:65 -> 6 [Async thread]\n", "nccl-remote-error", "0"},
		{"another process's chain is its own", "h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer x<1>\nh:9:3 [0] NCCL INFO group.cc:65 -> 2 [Async thread]\n", "nccl-remote-error,nccl-error", "0"},
		// NCCL_DEBUG=WARN prints no chain: the caller's own words fail the job.
		{"proxy failure alone", "h:1:2 [0] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 2\n", "nccl-error", "0"},
		{"proxy failure of code 6 alone", "h:1:2 [0] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6\n", "nccl-remote-error", "0"},
		{"2.12 proxy call alone", "h:1:2 [0] proxy.cc:884 NCCL WARN Proxy Call to rank 1 failed (Connect)\n", "nccl-error", "0"},
		{"plugin failure then its chain", "h:1:2 [0] get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\nh:1:2 [0] NCCL INFO include/net.h:19 -> 2\n", "net-plugin-fallback", "0"},
	}
	for _, c := range cases {
		l, err := Parse(strings.NewReader(c.log))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := Diagnose(l, nil, nil, "")
		if got := codes(r); got != c.codes {
			t.Errorf("%s: findings %q, want %q: %+v", c.name, got, c.codes, r.Findings)
		}
		if got := len(r.NCCLWarnings); strconv.Itoa(got) != c.warnings {
			t.Errorf("%s: %d warnings left unquoted, want %s: %q", c.name, got, c.warnings, r.NCCLWarnings)
		}
		if (c.codes != "") != (r.Outcome() == OutcomeFail) {
			t.Errorf("%s: outcome %s with findings %q", c.name, r.Outcome(), c.codes)
		}
	}
}

// TestRecordsOutsideNCCL: a failure NCCL does not print (libfabric's EFA provider, nccl-tests,
// PyTorch's monitor, NCCL EP's kernels) is read from its own record shape, and a result name
// or "Last error:" in a sentence of the user's is not.
func TestRecordsOutsideNCCL(t *testing.T) {
	cases := []struct{ line, codes string }{
		{"libfabric:20511:1688019302::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid address (7)", "efa-completion-error"},
		{"libfabric:4123:1700000012:efa:core:rxr_info_to_rxr():506<warn> FI_HMEM capability requires RDMA, which is turned off.", "libfabric-efa-warning"},
		// Another provider's warning names that provider and is no EFA failure (issue 52, class
		// 6): HPE Slingshot's cxi, whose messages hold "efa" only inside words ("default").
		{"libfabric:4123:1700000012::tcp:core:fn():5<warn> some tcp thing", "libfabric-warning"},
		{"libfabric:88211:1712000000::cxi:core:cxip_gen_auth_key():447<warn> Using default auth key, VNI 10", "libfabric-warning"},
		{"libfabric:4123:1700000012::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider efa output empty list", ""}, // EFA's: net-plugin-fallback reads it
		// A crash beside NCCL's errors (class 8): the shell's, Open MPI's and PyTorch elastic's words.
		{"/bin/bash: line 1:  4121 Segmentation fault      (core dumped) python train.py", "process-crashed"},
		{"[gpu-a:04121] Signal: Segmentation fault (11)", "process-crashed"},
		{"Signal 11 (SIGSEGV) received by PID 4121", "process-crashed"},
		{"Our fault: we forgot the default setting", ""},
		{"gpu-a: Test NCCL failure common.cu:1204 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '", "nccl-error"},
		{"gpu-a: Test CUDA failure common.cu:880 'out of memory'", "cuda-out-of-memory"},
		{"gpu-a: Test timeout (60s) common.cu:1020", "collective-timeout"},
		{"Warning: NCCL EP timeout for dispatch receive, rank 3, local_expert_idx 1, src_rank 7", "collective-timeout"},
		{"Warning: NCCL EP clean barrier timeout (P2P), myRank 3, peer 5", "collective-timeout"},
		{"[rank0]:[E1121 03:12:44.1 ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! Process will be terminated", "collective-timeout"},
		{"[rank2]:[E0311 09:12:44.5 ProcessGroupNCCL.cpp:541] [Rank 2] found async exception when checking for NCCL errors: NCCL error: remote process exited or there was a network error, NCCL version 2.22.3", "nccl-remote-error"},
		{"We got ncclSystemError and then ncclRemoteError: after an hour the job died.", ""},
		{"the doc says Last error: shows the detail", ""},
		{"ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.", "nccl-error"},
	}
	for _, c := range cases {
		l, err := Parse(strings.NewReader("h:1:2 [0] NCCL INFO NCCL version 2.30.7+cuda13.0\n" + c.line + "\n"))
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if got := codes(Diagnose(l, nil, nil, "")); got != c.codes {
			t.Errorf("%q: findings %q, want %q", c.line, got, c.codes)
		}
	}
}

// TestLooseRecords: records whose process prefix was stripped, redacted or never printed are
// NCCL's records still; prose that mentions NCCL is not.
func TestLooseRecords(t *testing.T) {
	cases := []struct {
		line      string
		host, msg string
		nccl      bool
		level     string // checked where given
	}{
		{"NCCL INFO Using network IBext_v8", "", "Using network IBext_v8", true, ""},
		{"  NCCL WARN Cuda failure 'out of memory'", "", "Cuda failure 'out of memory'", true, ""},
		{"[0] NCCL INFO bootstrap.cc:701 -> 6", "", "bootstrap.cc:701 -> 6", true, ""},
		{"[0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer x<1>", "", "socketProgress: Connection closed by remote peer x<1>", true, ""},
		{"gpu-server320 [5] misc/socket.cc:46 NCCL WARN socketProgress: x", "gpu-server320", "socketProgress: x", true, ""},
		{"<cluster_name>:922:1158 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "<cluster_name>", "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", true, ""},
		{"[hostname]:922:1158 [3] NCCL INFO x", "[hostname]", "x", true, ""},
		// Records without the usual framing (issue 52, class 1): NCCL 2.0 to 2.2's level without
		// the word NCCL, a WARN's location alone, aws-ofi-nccl's own logger and its words alone.
		{"cx50:18926:19004 [1] INFO NET : Using interface eno1:192.168.12.50<0>", "cx50", "NET : Using interface eno1:192.168.12.50<0>", true, "INFO"},
		{"cx50:18926:19004 [0] include/socket.h:185 WARN Call to connect failed : Connection refused", "cx50", "Call to connect failed : Connection refused", true, "WARN"},
		{"nccl_net_ofi_domain_get_ep:969 NCCL WARN NET/OFI Creating new endpoint failed", "", "NET/OFI Creating new endpoint failed", true, "WARN"},
		{"10.3.35.83: WARN: Function: find_ofi_provider Line: 543: NET/OFI Couldn't find any optimal provider", "", "NET/OFI Couldn't find any optimal provider", true, "WARN"},
		{"[1,1]<stdout>:INFO: Function: ofi_init Line: 757: NET/OFI Selected Provider is efa", "", "NET/OFI Selected Provider is efa", true, "INFO"},
		{"NET/OFI Selected Provider is cxi (found 8 nics)", "", "NET/OFI Selected Provider is cxi (found 8 nics)", true, "INFO"},
		// Not records: prose, and PyTorch's "Last error:" detail (read as the traceback's).
		{"we saw INFO lines and a WARN in the log", "", "", false, ""},
		{"[rank3]: NET/OFI Request 0x1 completed with error. RC: 113.", "", "", false, ""},
		{"see NCCL's debug.h:36 WARN format", "", "", false, ""},
		{"We set NCCL INFO level and saw nothing", "", "", false, ""},
		{"see the NCCL WARN lines below", "", "", false, ""},
	}
	for _, c := range cases {
		host, _, _, level, msg, ok := splitNCCL(c.line)
		if ok != c.nccl || host != c.host || msg != c.msg || c.level != "" && level != c.level {
			t.Errorf("%q: host %q level %q msg %q record %v; want %q %q %q %v", c.line, host, level, msg, ok, c.host, c.level, c.msg, c.nccl)
		}
	}
}

// TestTransportWithoutTrailers: what follows a transport on its line is not part of its name.
func TestTransportWithoutTrailers(t *testing.T) {
	for in, want := range map[string]string{
		"P2P/IPC/read [repeated 7x across cluster]": "P2P/IPC/read",
		"NET/AWS Libfabric/0/GDRDMA":                "NET/AWS Libfabric/0/GDRDMA",
		"NET/IB/0/GDRDMA(PCI)/Shared":               "NET/IB/0/GDRDMA(PCI)/Shared",
		"direct shared memory":                      "direct shared memory",
		"SHM/direct/direct  comm 0x1 rank 0":        "SHM/direct/direct",
		"P2P/CUMEM/read (note)":                     "P2P/CUMEM/read",
		// A terminal's wrap joined again with its padding inside the name (issue 52, class 4).
		"P2P/IPC/re      ad": "P2P/IPC/read",
	} {
		if got := transportName(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
