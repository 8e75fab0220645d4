package doctor

import (
	"slices"
	"strings"
	"testing"
)

// FuzzPrefixMatchesRegexp holds the hand-written prefix reader to ncclPrefix, the regular
// expression that documents the format: the same verdict, host, pid and tid on any input.
func FuzzPrefixMatchesRegexp(f *testing.F) {
	for _, s := range []string{
		"ip-10-0-0-1:41:41 [0]", "[1,0]<stdout>:worker-0:41:41 [0]", "h:1:2 [3] ofi_init:1355",
		"  | 2025-05-16T16:39:55.213-07:00 | ip-10-20-4-17:85:2550 [0] platform_config_endpoint:626",
		"[2026-03-02 10:01:17] worker-1:40:131 [0] ncclResult_t nccl_net_ofi_regMr:412",
		"h:1:2 [2] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208", "h:1:2 [0] x", "h:1 [0]", ":1:2 [0]",
		"a:b:1:2 [0] :7", "h:1:2 [0] a]b:3", "(RayTrainWorker pid=7) node:12:13 [1]",
		"h:1:2 [5] transport/net_ib/p2p.cc:688 (ncclIbCompletionEventProcess)", "h:1:2 [5] a.cc:1 (f g)", "h:1:2 [5] a.cc:1 ()",
		"h:1:2 [5] a.cc:1 (x) (y)", "h:1:2 [5] a.cc:1  (y)", "<cluster_name>:922:1158 [3]", "[hostname]:1:2 [0]", "x<a b>:1:2 [0]",
		"<a<b>:1:2 [0]", "<>:1:2 [0]", "[1,0]<stdout>:<h>:1:2 [0]", "<ab:1:2 [0]", "[ab:1:2 [0]", "x[h]:1:2 [0] f.cc:9 (g)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := ncclPrefix.FindStringSubmatchIndex(s)
		start, host, pid, tid, ok := processPrefix(s)
		if (m != nil) != ok {
			t.Fatalf("%q: regexp %v, hand %v", s, m != nil, ok)
		}
		if ok && (start != m[2] || host != s[m[2]:m[3]] || pid != s[m[4]:m[5]] || tid != s[m[6]:m[7]]) {
			t.Fatalf("%q: regexp %q %q %q at %d, hand %q %q %q at %d", s, s[m[2]:m[3]], s[m[4]:m[5]], s[m[6]:m[7]], m[2], host, pid, tid, start)
		}
	})
}

// FuzzKeysAreNecessary holds every keyed expression's keys to the expression: a line the
// expression matches always passes the substring test that guards it, so no match is skipped.
func FuzzKeysAreNecessary(f *testing.F) {
	for _, s := range []string{
		"NET/OFI Initializing aws-ofi-nccl 1.7.1-aws", "CUDA error 802 'system not yet initialized'",
		"cuda Failure 3", "Cuda failure 'initialization error'", "ſystem not yet initialized", "SYSTEM NOT YET INITIALIZED",
		"comm 0x5 rank 0 nranks 16 cudaDev 0 busId 101c0 commId 0x9 - Init START", "NCCL_IB_HCA set by environment to mlx5.",
		"NET/OFI Running on p4d.24xlarge platform, Setting NCCL_TOPO_FILE environment variable to /x.xml",
		"NET/Plugin : No plugin found (libnccl-net.so)", "Using internal Network plugin.",
	} {
		f.Add(s)
	}
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range keyedExprs {
			if k.re.MatchString(s) && !k.mayMatch(s) {
				t.Fatalf("%q matches %s but fails its keys %q", s, k.re, k.keys)
			}
		}
	})
}

// FuzzPrefixStartIsTheWholeMatch holds the shortcut every keyed expression takes (running from
// its literal prefix's first occurrence) to running it over the whole text.
func FuzzPrefixStartIsTheWholeMatch(f *testing.F) {
	f.Add("x NET/OFI Running on p5.48xlarge platform y")
	f.Add("Using network Using network AWS Libfabric")
	f.Add("comm 0x1 comm 0x5 rank 0 nranks 2 cudaDev 0 - Init START")
	f.Add("comm 0x5 rank 0 nranks 2 cudaDev 0 nvmlDev 3 busId 1a0 parent 0x7 color 1 commId 0x9 - Init COMPLETE")
	f.Add("comm 0x5 rank 0 nranks 2 cudaDev 0 busId  - Init START commId 0x1 - Init START")
	f.Add("comm 0x5 rank 1 nRanks 16 nNodes 2 localRanks 8 localRank 1 MNNVL 0")
	f.Add("nNodes 2 nNodes 2 localRanks 8 localRank 1 MNNVL 17")
	f.Add("rank 3 nranks 4 \t")
	f.Add("comm 0x7f rank 0 nranks 4")
	f.Add("comm 0x7f  rank 0 nranks 4")
	f.Add("Init timings - x total 1.5 (kernels 0.2, bootstrap 0.9)")
	f.Add("Init timings total 1.x total 2 (bootstrap x, bootstrap 3.)")
	f.Add("Init timings total 1 (\nbootstrap 2) Init timings total 3 (bootstrap 4)")
	f.Add("Init timings total 1 (no boot) total 2 (bootstrap 5)")
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range keyedExprs {
			if got, want := k.submatches(s), k.re.FindStringSubmatch(s); !slices.Equal(got, want) {
				t.Fatalf("%s on %q: %q, over the whole text %q", k.re, s, got, want)
			}
		}
	})
}

// addLogLines seeds a fuzz target with every line of every log in testdata: the shapes the
// expressions were written for.
func addLogLines(f *testing.F) {
	for _, tl := range everyTestLog(f) {
		for _, line := range strings.Split(tl.text, "\n") {
			f.Add(line)
		}
	}
}

// FuzzNextNCCLIsIndex holds the marker search to strings.Index.
func FuzzNextNCCLIsIndex(f *testing.F) {
	f.Add(" NCCL INFO x", 0)
	f.Add("NCCL  NCCL x NCCL ", 1)
	f.Fuzz(func(t *testing.T, s string, from int) {
		if from < 0 || from > len(s) {
			return
		}
		want := strings.Index(s[from:], " NCCL ")
		if want >= 0 {
			want += from
		}
		if got := nextNCCL(s, from); got != want {
			t.Fatalf("%q from %d: %d, strings.Index %d", s, from, got, want)
		}
	})
}

// FuzzMarksAreTheSearches holds markNCCL's one pass to the searches it replaces: every
// marker nextNCCL finds, in order, and strings.Contains of versionRe's key.
func FuzzMarksAreTheSearches(f *testing.F) {
	f.Add(" NCCL INFO NCCL version 2.21.5")
	f.Add("NCCL  NCCL x NCCL  NCCL version NCCL ")
	f.Add("NCCL version 2.3")
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		m := markNCCL(s)
		if want := strings.Contains(s, "NCCL version "); m.version != want {
			t.Fatalf("%q: version %v, strings.Contains %v", s, m.version, want)
		}
		for n, from := 0, 0; ; n++ {
			want := nextNCCL(s, from)
			if got := m.marker(s, n, from); got != want {
				t.Fatalf("%q: marker %d at %d, nextNCCL %d", s, n, got, want)
			}
			if want < 0 {
				break
			}
			from = want + 1
		}
	})
}

// FuzzLineChecksAreTheSearches holds readLine's one-pass byte checks, a block's (plainText)
// and the searches for a connection's " via " (holdsSpaced) and for a second record in a
// connection line (holdsNCCL) to the searches they replace.
func FuzzLineChecksAreTheSearches(f *testing.F) {
	for _, s := range []string{"plain", "\x00", "é", "\x1b[32mx\x1b[0m", "read[32m [repeated 7x][0m", "[0", "0m", "[0[0m", "12345678\x1b", "1234567m", "12345678m", "é12345678m", "via x", " via ", "xvia  via ", "viavia ", " vi a via", "NNCCL x", "NCCL", "N NCCL ", "via NET/IB NCCL "} {
		f.Add(s)
	}
	long := strings.Repeat("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM\n", 3)
	for _, at := range []int{0, 7, 31, 32, 33, 63, 64, 100, len(long) - 1} { // a 32-byte step's every place and its tail
		for _, b := range []string{"\x80", "é", "\x00", "\x1b", "[0m"} {
			f.Add(long[:at] + b + long[at:])
		}
	}
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		ascii, nul, esc, em := scanBytes(s)
		wantASCII := !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
		if ascii != wantASCII || nul != (strings.IndexByte(s, 0) >= 0) || esc != (strings.IndexByte(s, 0x1b) >= 0) || em != (strings.IndexByte(s, 'm') >= 0) {
			t.Fatalf("%q: ascii %v nul %v esc %v m %v", s, ascii, nul, esc, em)
		}
		if got, want := resetCode(s), strings.Contains(s, "[0m"); got != want {
			t.Fatalf("%q: resetCode %v, strings.Contains %v", s, got, want)
		}
		if got, want := holdsSpaced(s, "via "), strings.Contains(s, " via "); got != want {
			t.Fatalf("%q: holdsSpaced %v, strings.Contains %v", s, got, want)
		}
		if got, want := holdsNCCL(s), strings.Contains(s, "NCCL "); got != want {
			t.Fatalf("%q: holdsNCCL %v, strings.Contains %v", s, got, want)
		}
		if got, want := plainText(s), wantASCII && !nul && !esc && !strings.Contains(s, "[0m"); got != want {
			t.Fatalf("%q: plainText %v, want %v", s, got, want)
		}
	})
}

// FuzzFailureGateIsNecessary holds the words a line must hold for Failures.read to look at it
// (mayReportFailure) to the expressions it then runs: no failure a line reports is skipped.
func FuzzFailureGateIsNecessary(f *testing.F) {
	f.Add("ncclTimeout: Operation timed out.")
	f.Add("Warning: NCCL EP clean barrier timeout (P2P), myRank 3, peer 5")
	f.Add("libfabric:1:2::efa:cq:f():3<warn> x")
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range onFailure {
			if k.re.MatchString(s) && !mayReportFailure(s) {
				t.Fatalf("%q matches %s but fails mayReportFailure", s, k.re)
			}
		}
	})
}
