package doctor

import "testing"

// FuzzPrefixMatchesRegexp holds the hand-written prefix reader to ncclPrefix, the regular
// expression that documents the format: the same verdict, host, pid and tid on any input.
func FuzzPrefixMatchesRegexp(f *testing.F) {
	for _, s := range []string{
		"ip-10-0-0-1:41:41 [0]", "[1,0]<stdout>:worker-0:41:41 [0]", "h:1:2 [3] ofi_init:1355",
		"  | 2025-05-16T16:39:55.213-07:00 | ip-10-20-4-17:85:2550 [0] platform_config_endpoint:626",
		"[2026-03-02 10:01:17] worker-1:40:131 [0] ncclResult_t nccl_net_ofi_regMr:412",
		"h:1:2 [2] int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208", "h:1:2 [0] x", "h:1 [0]", ":1:2 [0]",
		"a:b:1:2 [0] :7", "h:1:2 [0] a]b:3", "(RayTrainWorker pid=7) node:12:13 [1]",
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
