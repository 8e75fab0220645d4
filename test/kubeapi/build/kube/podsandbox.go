package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// A pod the kubelet stand-in runs gets a sandbox as a kubelet's pod does: a process that holds a
// network namespace of its own (the pause container's part), with one veth pair to the host and
// an address of its own, routed as the AWS VPC CNI and Calico route pods: a /32 on the pod's
// eth0, the host end of the pair as its gateway at a link-local address. The pod's containers
// join that namespace, so each binds its ports (:9443, :8081) without meeting another pod's, and
// the API server reaches a webhook at podIP:port as on EKS. When the sandbox process dies (the
// test ends however it ends: every process here dies with its parent), the kernel removes the
// namespace, the veth pair and its routes.

// podIPFor is a pod's address, from its sandbox's process ID (unique on the machine while the
// sandbox lives, so test processes running side by side never give two pods one address):
// 10.192.0.0/10 holds every ID up to Linux's largest pid_max (2^22).
func podIPFor(pid int) string {
	return fmt.Sprintf("10.%d.%d.%d", 192+(pid>>16)&63, (pid>>8)&255, pid&255)
}

// newPodSandboxCommand is the sandbox process: it does nothing until it is signalled.
func newPodSandboxCommand() *cobra.Command {
	return &cobra.Command{Use: "pod-sandbox", RunE: func(*cobra.Command, []string) error {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
		<-c
		return nil
	}}
}

// sandbox is one pod's network namespace, held by its process.
type sandbox struct {
	cmd     *exec.Cmd
	ip      string
	gateway string
}

// startSandbox starts the sandbox process in a new network namespace and wires it: the veth
// pair, the pod's address and routes, with gateway (the address the API server listens on for
// the pods, --api-server-host) as the host end and the pod's default route. The process dies
// with this one.
func startSandbox(gateway string) (*sandbox, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "pod-sandbox")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pod sandbox: a network namespace needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN): %w", err)
	}
	go cmd.Wait()
	s := &sandbox{cmd: cmd, ip: podIPFor(cmd.Process.Pid), gateway: gateway}
	if err := s.wire(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// wire makes the pod's network with iproute2's ip, as a CNI plugin would.
func (s *sandbox) wire() error {
	pid := strconv.Itoa(s.cmd.Process.Pid)
	host, peer := "gpch"+pid, "gpcp"+pid // at most 11 characters: Linux allows 15
	inPod := "--net=/proc/" + pid + "/ns/net"
	steps := [][]string{
		{"ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", pid},
		{"ip", "addr", "add", s.gateway + "/32", "dev", host},
		{"ip", "link", "set", host, "up"},
		{"ip", "route", "add", s.ip + "/32", "dev", host},
		{"nsenter", inPod, "ip", "link", "set", "lo", "up"},
		{"nsenter", inPod, "ip", "link", "set", peer, "name", "eth0"},
		{"nsenter", inPod, "ip", "addr", "add", s.ip + "/32", "dev", "eth0"},
		{"nsenter", inPod, "ip", "link", "set", "eth0", "up"},
		{"nsenter", inPod, "ip", "route", "add", s.gateway, "dev", "eth0"},
		{"nsenter", inPod, "ip", "route", "add", "default", "via", s.gateway, "dev", "eth0"},
	}
	for _, step := range steps {
		if out, err := exec.Command(step[0], step[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("pod network: %s: %v: %s", strings.Join(step, " "), err, out)
		}
	}
	return nil
}

// netns is the path a container joins the sandbox's network namespace by.
func (s *sandbox) netns() string { return fmt.Sprintf("/proc/%d/ns/net", s.cmd.Process.Pid) }

// stop ends the sandbox: the kernel removes its namespace and veth pair once no container holds
// them.
func (s *sandbox) stop() {
	s.cmd.Process.Kill()
}
