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

// install is the fabric-manager DaemonSet's apt step.
func install(packages ...string) string {
	return "apt-get update -qq\napt-get install -y -qq --no-install-recommends " + strings.Join(packages, " ")
}

// daemonSetScript installs the fabric manager matching the driver and runs it in the foreground,
// as the container's process, so the kubelet supervises it. The pool's health gate learns that it
// serves from CUDA working on the node.
func daemonSetScript(driver string) string {
	return strings.Join([]string{
		"set -eu",
		install(packageName(driver)),
		"sed -i 's/^DAEMONIZE=.*/DAEMONIZE=0/' " + configFile,
		"exec nv-fabricmanager -c " + configFile,
	}, "\n")
}
