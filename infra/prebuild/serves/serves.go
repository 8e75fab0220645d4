// Package serves checks that a provider plugin starts: a plugin's first line on stdout is the
// port of its gRPC server.
package serves

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Port starts the program, reads its first line within a minute, and fails the test unless it
// is a port number; the program is killed either way.
func Port(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case l := <-line:
		if port, err := strconv.Atoi(l); err != nil || port <= 0 || port > 65535 {
			t.Fatalf("%s printed %q, not a port; stderr: %s", name, l, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s printed no port within a minute; stderr: %s", name, stderr.String())
	}
}
