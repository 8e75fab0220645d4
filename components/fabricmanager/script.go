package fabricmanager

import (
	"strconv"
	"strings"
)

// packageName is fabric manager's Debian package in NVIDIA's CUDA repository for a driver: from
// the 580 branch on it is "nvidia-fabricmanager", versioned by the driver; before, the branch is
// in the name (NVIDIA gpu-driver-container ubuntu22.04/install.sh: "nvidia-fabricmanager=<ver>-1"
// for branch ≥ 580, "nvidia-fabricmanager-<branch>=<ver>-1" below).
func packageName(driver string) string {
	branch, _, _ := strings.Cut(driver, ".")
	if b, err := strconv.Atoi(branch); err == nil && b >= 580 {
		return "nvidia-fabricmanager=" + driver + "-1"
	}
	return "nvidia-fabricmanager-" + branch + "=" + driver + "-1"
}

// waitForFabricManager is the shell that waits until fabric manager answers on its command port
// in the pod's own network namespace (the DaemonSet runs it there), or gives up when FM_PID
// exits first.
const waitForFabricManager = `wait_for_fabric_manager() {
  until (exec 3<>/dev/tcp/127.0.0.1/$FM_PORT) 2>/dev/null; do
    if ! kill -0 "$FM_PID" 2>/dev/null; then echo "fabric manager exited before serving"; return 1; fi
    sleep 5
  done
}
`

// liftTaint is the shell that removes the node's startup taint (topology.FabricManagerTaint).
// Node taints are an atomic list (k8s.io/api core/v1: +listType=atomic): a JSON patch that tests
// the key at an index and removes that index is applied only if the test holds (HTTP 422
// otherwise), so it removes exactly that taint and nothing another agent added meanwhile; the
// index is searched, and a missing taint is not an error (a restarted pod on an initialized
// node). Any other answer, the admission policy's 403 among them (ownNodePolicy), fails it.
// Reads NODE_NAME, TAINT_KEY and the pod's service account.
const liftTaint = `lift_taint() {
  sa=${SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
  url="https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}/api/v1/nodes/${NODE_NAME}"
  for i in $(seq 0 63); do
    resp=$(curl -sS -w '\n%{http_code}' --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" \
      -H 'Content-Type: application/json-patch+json' -X PATCH "$url" \
      --data "[{\"op\":\"test\",\"path\":\"/spec/taints/$i/key\",\"value\":\"$TAINT_KEY\"},{\"op\":\"remove\",\"path\":\"/spec/taints/$i\"}]") || return 1
    case "${resp##*$'\n'}" in
      200) echo "fabric manager serves: removed $TAINT_KEY from $NODE_NAME"; return 0 ;;
      422) ;;
      *) echo "removing $TAINT_KEY from $NODE_NAME: HTTP ${resp##*$'\n'}: ${resp%$'\n'*}"; return 1 ;;
    esac
  done
  echo "fabric manager serves; $NODE_NAME has no $TAINT_KEY taint"
}
`

// install is the fabric-manager DaemonSet's apt step: curl for the API call, and the packages.
func install(packages ...string) string {
	return "apt-get update -qq\napt-get install -y -qq --no-install-recommends ca-certificates curl " + strings.Join(packages, " ")
}

// daemonSetScript installs the fabric manager matching the driver, runs it under the container's
// shell so the kubelet supervises it, and lifts the node's taint once it serves.
func daemonSetScript(driver string) string {
	return strings.Join([]string{
		"set -eu",
		install(packageName(driver)),
		// Stay in the foreground so the kubelet supervises it.
		"sed -i 's/^DAEMONIZE=.*/DAEMONIZE=0/' " + configFile,
		"nv-fabricmanager -c " + configFile + " &",
		"FM_PID=$!",
		waitForFabricManager + "wait_for_fabric_manager",
		liftTaint + "lift_taint",
		`wait "$FM_PID"`,
	}, "\n")
}

// cudaReadyScript runs NVIDIA's CUDA vector-add sample until it passes: on an NVSwitch node CUDA
// refuses work with error 802, "system not yet initialized", until fabric manager has set the
// fabric up (NVIDIA gpu-operator#1043: the operator's validator, which runs the same sample, failed
// "Failed to allocate device vector A (error code system not yet initialized)!" until fabric
// manager ran at the driver's version), so a pass is fabric manager serving, asked through the
// driver, without the host's network.
const cudaReadyScript = `until ` + CUDASampleBinary + `; do echo "CUDA is not ready (fabric manager not serving yet?); again in 10 s"; sleep 10; done`

// lifterScript lifts the taint, then idles (a DaemonSet's pod must keep running).
func lifterScript() string {
	return strings.Join([]string{"set -eu", liftTaint + "lift_taint", "exec sleep infinity"}, "\n")
}
