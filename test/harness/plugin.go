package harness

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Plugin is a Pulumi provider plugin started on its own, as the engine starts one: it prints its
// gRPC port on its first line and serves the provider protocol there.
type Plugin struct {
	cmd    *exec.Cmd
	conn   *grpc.ClientConn
	Client pulumirpc.ResourceProviderClient
}

// StartPlugin runs a provider plugin binary and connects to it.
func StartPlugin(bin string, env []string) (*Plugin, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Plugin{cmd: cmd}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var port int
	select {
	case l := <-line:
		if port, err = strconv.Atoi(l); err != nil || port <= 0 || port > 65535 {
			p.Close()
			return nil, fmt.Errorf("%s printed %q, not a port; stderr: %s", bin, l, stderr.String())
		}
	case <-time.After(time.Minute):
		p.Close()
		return nil, fmt.Errorf("%s printed no port within a minute; stderr: %s", bin, stderr.String())
	}
	// A provider's schema is megabytes (the kubernetes provider's, 5 MB): the engine's own
	// options raise gRPC's 4 MB default limit.
	if p.conn, err = grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()),
		rpcutil.GrpcChannelOptions()); err != nil {
		p.Close()
		return nil, err
	}
	p.Client = pulumirpc.NewResourceProviderClient(p.conn)
	return p, nil
}

// Version is the version the plugin reports (GetPluginInfo), which the engine records.
func (p *Plugin) Version() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := p.Client.GetPluginInfo(ctx, &emptypb.Empty{})
	if err != nil {
		return "", err
	}
	return info.GetVersion(), nil
}

// Close stops the plugin.
func (p *Plugin) Close() {
	if p.conn != nil {
		p.conn.Close()
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
}
