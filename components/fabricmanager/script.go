package fabricmanager

// startScript checks what the stack's image holds against the node, says what became of the start
// in the status file the node's health gate reads (topology.FabricManagerStatusFile), and runs
// fabric manager in the foreground, as the container's process, so the kubelet supervises it. It
// installs nothing: the image is pinned by digest, and nothing is fetched when a node starts.
//
// Fabric manager refuses a driver of another version than its own and leaves the fabric down
// (CUDA error 802), so the script refuses first, with both versions: the image's, from
// `nv-fabricmanager --version` ("Fabric Manager version is : 450.102.04", its last field), and
// the node's, from the kernel module (/sys/module/nvidia/version holds it alone, "535.146.02").
// POSIX sh; reads FM_STATUS, FM_CONFIG, NODE_DRIVER_VERSION_FILE, NVIDIA_DRIVER_VERSION and
// FM_IMAGE (the DaemonSet's environment, env()).
const startScript = `set -u
mkdir -p "$(dirname "$FM_STATUS")"
say() { printf '%s\n' "$*" > "$FM_STATUS.new" && mv "$FM_STATUS.new" "$FM_STATUS"; }
refuse() { say "fail $*"; echo "fabric manager not started: $*" >&2; exit 1; }
command -v nv-fabricmanager > /dev/null || refuse "the image $FM_IMAGE has no nv-fabricmanager on its PATH"
image=$(nv-fabricmanager --version 2>&1 | awk '/[Vv]ersion/ { v = $NF } END { print v }')
[ "$image" = "$NVIDIA_DRIVER_VERSION" ] || refuse "the image $FM_IMAGE holds nv-fabricmanager ${image:-of no version it prints}, and the stack's nvidiaDriverVersion is $NVIDIA_DRIVER_VERSION: build the image at the stack's driver"
node=$(cat "$NODE_DRIVER_VERSION_FILE" 2>/dev/null) || refuse "no NVIDIA driver is loaded on the node ($NODE_DRIVER_VERSION_FILE is missing)"
[ "$node" = "$NVIDIA_DRIVER_VERSION" ] || refuse "the node's NVIDIA driver is $node, and the stack's nvidiaDriverVersion is $NVIDIA_DRIVER_VERSION: set it to the node image's driver and rebuild the fabric-manager image at it"
[ -r "$FM_CONFIG" ] || refuse "the image $FM_IMAGE has no $FM_CONFIG"
config=$(mktemp) && sed 's/^DAEMONIZE=.*/DAEMONIZE=0/' "$FM_CONFIG" > "$config" || refuse "cannot write fabric manager's configuration"
say "started nv-fabricmanager $image"
exec nv-fabricmanager -c "$config"
`
