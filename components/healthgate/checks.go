package healthgate

import (
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// The checks run in init containers, one after another, and write one line per check to a file
// of the pod's results volume: "pass|fail|wait <check> <what was found>". They exit 0 whatever
// they find (a failing init container would only be restarted, and nothing would label the
// node); the gate container reads every line and acts on the node. Every value they compare
// with comes from the pool's topology.HealthGateSpec, through the container's environment.

// ResultsDir is where the checks write their results (an emptyDir shared by the pod's containers).
const ResultsDir = "/results"

// EnvVar is one environment variable of a gate container.
type EnvVar struct{ Name, Value string }

// gpuEnv is what the GPU checks read: the pool's expectations and where the tools are.
func gpuEnv(h topology.HealthGateSpec) []EnvVar {
	return []EnvVar{{"NVIDIA_VISIBLE_DEVICES", "all"}, {"NVIDIA_DRIVER_CAPABILITIES", "compute,utility"},
		{"RESULTS", ResultsDir}, {"CHECKS", strings.Join(h.Checks, " ")}, {"GPUS", strconv.Itoa(h.GPUs)}, {"GPU_MODEL", h.GPUModel},
		{"WAIT_SECONDS", strconv.Itoa(h.WaitSeconds)}, {"RETRY_SECONDS", strconv.Itoa(RetrySeconds)}, {"CUDA_SAMPLE", CUDASampleBinary},
		{"FM_STATUS", h.FabricManagerStatus}}
}

// efaEnv is what the EFA check reads.
func efaEnv(h topology.HealthGateSpec) []EnvVar {
	return []EnvVar{{"RESULTS", ResultsDir}, {"EFA_DEVICES", strconv.Itoa(h.EFADevices)}, {"FI_INFO", FIInfo}}
}

// gateEnv is what the gate container reads besides its node's name.
func gateEnv(h topology.HealthGateSpec) []EnvVar {
	return []EnvVar{{"RESULTS", ResultsDir}, {"CHECKS", strings.Join(h.Checks, " ")},
		{"TAINT_KEY", topology.HealthTaint.Key}, {"LABEL_KEY", topology.LabelHealthFailed}}
}

// report is the shell function every check writes its result with.
const report = `report() { printf '%s %s %s\n' "$1" "$2" "$3" >> "$OUT"; printf '%s %s: %s\n' "$1" "$2" "$3"; }
`

// smiJudge reads `nvidia-smi -q` and judges the GPU count, the model and the fabric state.
// The key column's width differs between drivers (the colon at column 42 on 565, about 55 on
// 580: thamada/nvidia-smi nvsim/H100SXMx8_smi.py, NVIDIA/gpu-operator#2511), so a line is split
// at its first " : ", never by column. A GPU's block starts "GPU <PCI bus id>" at column 0, its
// keys are indented 4 spaces, a section's keys 8 ("    Fabric" / "        State : Completed").
// The fabric state goes Not Started, In Progress, Completed (NVIDIA/NVSentinel#883); Completed
// with any status but Success is a fabric that came up wrong ("Insufficient Resources":
// Azure/azhpc-images#506), and so is N/A, which A100 reports whatever fabric manager does
// (bottlerocket-os/bottlerocket#3873 on p4d), and which is why A100 pools do not run this check.
const smiJudge = `function val(s,   i) { i = index(s, " : "); s = i ? substr(s, i + 3) : ""; sub(/[ \t\r]+$/, "", s); return s }
function key(s,   i) { i = index(s, " : "); if (i) s = substr(s, 1, i - 1); gsub(/^[ \t]+|[ \t\r]+$/, "", s); return s }
/^GPU [0-9A-Fa-f]+:/ { n++; bus[n] = $2; section = ""; next }
n && /^    [^ ]/ { if (index($0, " : ") == 0) { section = key($0); next } section = ""; if (key($0) == "Product Name") name[n] = val($0); next }
n && section == "Fabric" && /^        [^ ]/ { k = key($0); if (k == "State") state[n] = val($0); if (k == "Status") status[n] = val($0) }
END {
  if (n != gpus) printf "fail gpu-count nvidia-smi lists %d GPUs; the pool has %d per node\n", n, gpus
  else printf "pass gpu-count %d GPUs\n", n
  bad = ""
  for (i = 1; i <= n; i++) if (!(name[i] == model || index(name[i], model " ") == 1 || index(name[i], model "-") == 1)) { bad = "GPU " bus[i] " is " (name[i] == "" ? "unnamed" : name[i]); break }
  if (n == 0) printf "fail gpu-model no GPU to name\n"
  else if (bad != "") printf "fail gpu-model %s; the pool has %s GPUs\n", bad, model
  else printf "pass gpu-model %s\n", name[1]
  if (!fabric) exit
  verdict = "pass"; what = "Completed, Success on every GPU"
  for (i = 1; i <= n; i++) {
    if (state[i] == "Completed" && status[i] == "Success") continue
    found = "GPU " bus[i] " fabric state " (state[i] == "" ? "missing" : state[i]) ", status " (status[i] == "" ? "missing" : status[i])
    if (state[i] == "Not Started" || state[i] == "In Progress") { if (verdict == "pass") { verdict = "wait"; what = found } }
    else { verdict = "fail"; what = found; break }
  }
  if (n == 0) { verdict = "fail"; what = "no GPU reports a fabric state" }
  printf "%s fabric-state %s\n", verdict, what
}
`

// topoJudge reads `nvidia-smi topo -m` and judges that every pair of GPUs is joined over NVLink
// ("NV<n>": a bonded set of n NVLinks, NV18 on H100 and H200, NV12 on A100: NVIDIA/nccl#1737,
// #1505); any other entry (SYS, NODE, PHB, PXB, PIX) is a path over PCIe, an NVLink down.
// Columns are separated by spaces on some drivers and tabs on others (NVIDIA/go-gpuallocator#17);
// the header row, which ends in "CPU Affinity", and the NIC rows and legends are skipped.
const topoJudge = `/CPU Affinity/ { next }
$1 ~ /^GPU[0-9]+$/ && $2 !~ /^GPU/ {
  rows++; i = substr($1, 4) + 0
  for (j = 0; j < gpus; j++) {
    v = $(j + 2)
    if (j == i) continue
    if (v !~ /^NV[0-9]+$/ && bad == "") bad = "GPU" i " and GPU" j " are joined by " (v == "" ? "nothing" : v) ", not NVLink"
  }
}
END {
  if (rows != gpus) printf "fail nvlink nvidia-smi topo -m shows %d GPUs; the pool has %d per node\n", rows, gpus
  else if (bad != "") printf "fail nvlink %s\n", bad
  else printf "pass nvlink every GPU pair over NVLink\n"
}
`

// gpuChecks runs the CUDA wait and the nvidia-smi checks (POSIX sh and awk: the CUDA sample's
// Ubuntu image has dash and mawk). CUDA first: on an NVSwitch node CUDA fails with error 802,
// "system not yet initialized", until fabric manager has set the fabric up (NVIDIA
// gpu-operator#1043: the operator's validator, which runs the same sample, failed "Failed to
// allocate device vector A (error code system not yet initialized)!" until fabric manager ran at
// the driver's version), so a pass is fabric manager serving, asked through the driver. Where
// gpucluster's DaemonSet runs fabric manager (FM_STATUS set), a start it refused fails the node
// at once with its reason, and a DaemonSet that never started is named when the wait runs out.
// Reads gpuEnv's variables.
func gpuChecks() string {
	return strings.Join([]string{
		"set -u",
		`OUT="$RESULTS/gpu"`,
		": > \"$OUT\"",
		report + `wants() { case " $CHECKS " in *" $1 "*) return 0 ;; esac; return 1; }`,
		`deadline=$(( $(date +%s) + WAIT_SECONDS ))`,
		`if wants cuda; then
  until last=$("$CUDA_SAMPLE" 2>&1); do
    fm=""; [ -n "$FM_STATUS" ] && fm=$(cat "$FM_STATUS" 2>/dev/null)
    case "$fm" in
    "fail "*) report fail cuda "fabric manager cannot start: ${fm#fail }"; exit 0 ;;
    esac
    if [ "$(date +%s)" -ge "$deadline" ]; then
      never=""; [ -n "$FM_STATUS" ] && [ -z "$fm" ] && never=" (fabric manager never started on this node: its DaemonSet's pod wrote no $FM_STATUS; is its image pullable?)"
      report fail cuda "CUDA still fails after $WAIT_SECONDS s: $(printf '%s\n' "$last" | tail -n 1)$never"; exit 0
    fi
    echo "CUDA is not ready (fabric manager not serving yet?); again in $RETRY_SECONDS s"; sleep "$RETRY_SECONDS"
  done
  report pass cuda "CUDA runs"
fi`,
		`fabric=0; wants fabric-state && fabric=1`,
		`while :; do
  if ! smi=$(nvidia-smi -q 2>&1); then
    report fail gpu-count "nvidia-smi -q failed: $(printf '%s\n' "$smi" | tail -n 1)"; exit 0
  fi
  verdicts=$(printf '%s\n' "$smi" | awk -v gpus="$GPUS" -v model="$GPU_MODEL" -v fabric="$fabric" '` + smiJudge + `')
  case "$verdicts" in
  *"wait fabric-state"*) if [ "$(date +%s)" -lt "$deadline" ]; then
      echo "$verdicts" | tail -n 1; sleep "$RETRY_SECONDS"; continue
    fi
    verdicts=$(printf '%s\n' "$verdicts" | sed "s/^wait fabric-state /fail fabric-state after $WAIT_SECONDS s, /") ;;
  esac
  break
done`,
		`printf '%s\n' "$verdicts" | while read -r verdict check what; do report "$verdict" "$check" "$what"; done`,
		`if wants nvlink; then
  if topo=$(nvidia-smi topo -m 2>&1); then
    printf '%s\n' "$topo" | awk -v gpus="$GPUS" '` + topoJudge + `' | while read -r verdict check what; do report "$verdict" "$check" "$what"; done
  else
    report fail nvlink "nvidia-smi topo -m failed: $(printf '%s\n' "$topo" | tail -n 1)"
  fi
fi`,
	}, "\n")
}

// FIInfo is libfabric's fi_info in the EFA check's image: the EFA installer puts libfabric under
// /opt/amazon/efa (awslabs/awsome-distributed-training micro-benchmarks/nccl-tests Dockerfile:
// LIBFABRIC_PATH=/opt/amazon/efa, its bin on PATH).
const FIInfo = "/opt/amazon/efa/bin/fi_info"

// efaJudge counts the EFA devices in `fi_info -p efa`: each device is one domain named
// "<device>-rdm" for reliable-datagram endpoints (and "<device>-dgrm" for datagram ones; libfabric
// prov/efa efa_domain_name_suffix), listed once per fabric that offers it: twice from libfabric 2
// ("efa" and "efa-direct"), once before. So the devices are the distinct -rdm domains.
const efaJudge = `$1 == "domain:" && $2 ~ /-rdm$/ && !seen[$2]++ { n++ } END { print n + 0 }`

// efaCheck runs fi_info and compares the EFA devices libfabric lists with the pool's (POSIX sh,
// as the image's shell may be dash). With none visible fi_info exits 61 and prints
// "fi_getinfo: -61 (No data available)" (libfabric util/info.c): the device plugin's count comes
// from the same devices, so the fix is the same. Reads efaEnv's variables.
func efaCheck() string {
	return strings.Join([]string{
		"set -u",
		`OUT="$RESULTS/efa"`,
		": > \"$OUT\"",
		report + `if info=$("$FI_INFO" -p efa 2>&1); then
  n=$(printf '%s\n' "$info" | awk '` + efaJudge + `')
  why=""
else
  n=0; why=" ($(printf '%s\n' "$info" | tail -n 1))"
fi`,
		`if [ "$n" -eq "$EFA_DEVICES" ]; then
  report pass efa-devices "libfabric lists $n EFA devices"
else
  report fail efa-devices "fi_info -p efa lists $n EFA devices$why; the pool's nodes have $EFA_DEVICES"
fi`,
	}, "\n")
}
