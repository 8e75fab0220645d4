package enginetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/test/realengine/stackgroups"
)

// diyLegacyLayout are the stacks whose file backend is in the DIY backend's legacy layout (no
// project-scoped stacks), as a state store made before Pulumi 3.61 still is; every other stack's
// is in the project layout. Each layout reads a stack reference its own way, and the stacks that
// refer to themselves (their Capacity Block pools: mixed, gb200-nvl72) run one on each.
var diyLegacyLayout = map[string]bool{"mixed": true}

// RunStackGroup runs each stack of a group through the real Pulumi CLI and engine. The
// lifecycle: up; a second up with no changes; every documented output, and the README's
// benchmark command on it; the stack's change (StackChanges: a resize, a new Capacity Block),
// applied in place or refused before anything changes. The expiry: a preview and an up after
// `gpucluster expire` that change only the expiry; the expiry firing, an up that keeps the pools
// stopped, and an extended expiry that restores them. Both end in destroy, in an order where
// every GPU pool goes before what it needs (the doubles' record), leaving nothing.
func RunStackGroup(t *testing.T, group string) {
	entries, ok := stackgroups.Groups[group]
	if !ok {
		t.Fatalf("no stack group %q in stackgroups.Groups", group)
	}
	for _, entry := range entries {
		name, part, _ := strings.Cut(entry, "/")
		t.Run(entry, func(t *testing.T) {
			t.Parallel() // each stack has its own API server and workspace
			// The file backend rewrites the whole state after every step, and a stack with
			// benchmarks holds megabytes of CRDs (Trainer's, JobSet's, Kueue's): written
			// hundreds of times per up, they took this test past go test's 10 minutes. Here the
			// engine saves the state once, at the end (Pulumi's PULUMI_SKIP_CHECKPOINTS); the
			// interrupted up of TestRealEngineInterruptedUp keeps every checkpoint.
			vars := map[string]string{"PULUMI_SKIP_CHECKPOINTS": "true"}
			if diyLegacyLayout[name] {
				// Pulumi's names for the legacy layout, and for using it past its deprecation
				// (pulumi sdk go/common/env; pkg backend/diy backend.go).
				vars["PULUMI_DIY_BACKEND_LEGACY_LAYOUT"], vars["PULUMI_DIY_BACKEND_IGNORE_DEPRECATION_ERROR"] = "1", "1"
			}
			d := deployWith(t, name, deployOptions{vars: vars})
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()

			steps := &stepTimes{last: time.Now()}
			up, err := d.Stack.Up(ctx, optup.ProgressStreams(&d.Log))
			steps.done("up")
			if err != nil {
				d.Fail("pulumi up", err)
			}
			created := count(up.Summary.ResourceChanges, "create")
			d.checkStateLayout(diyLegacyLayout[name])
			d.checkPulumiEKSChildren(d.Calls())
			d.checkChartNames(ctx)
			d.checkComputeDomains(ctx)
			if part != stackgroups.PartExpiry {
				d.checkChartsAsPlanned(ctx)
				steps.done("charts as planned")
				d.checkLiveCluster(ctx)
				steps.done("live cluster")
				d.checkNoChanges(ctx)
				steps.done("second up")
				d.checkOutputs(ctx)
				steps.done("outputs")
				d.checkChange(ctx)
				d.checkComputeDomains(ctx) // a resized pool's domain is a new one
				steps.done("change")
			}
			if part != stackgroups.PartLifecycle {
				d.checkExpire(ctx, "1h")
				steps.done("expire")
				d.checkFiredExpiry(ctx)
				steps.done("fired expiry")
			}

			deletedWith := d.DeletedWith(ctx)
			objects := d.KubernetesObjects(ctx)
			engine := make(chan events.EngineEvent)
			deletes := deleteOrder(engine)
			// Deleting a CRD waits for the API server's CRD finalizer, and that can stall for up
			// to five minutes: its first list of the CRD's objects meets a watch cache not yet
			// ready ("storage is (re)initializing", apiserver pkg/storage/cacher/cacher.go, a
			// 429 since 1.34), its retry may read a stale CRD and give up on a conflict without
			// requeueing (apiextensions-apiserver pkg/controller/finalizer/crd_finalizer.go),
			// and then only the informer's 5-minute resync brings it back. EKS runs the same
			// code. Here one CRD of the benchmark stack's charts held its destroy 214 to 241 s
			// in 3 of 14 runs (30 s otherwise).
			down, err := d.Stack.Destroy(ctx, optdestroy.ProgressStreams(&d.Log), optdestroy.EventStreams(engine))
			steps.done("destroy")
			if err != nil {
				d.Fail("pulumi destroy", err)
			}
			d.checkDestroyOrder(<-deletes)
			d.CheckNothingLeft(ctx, d.Calls(), deletedWith, objects)
			d.checkAWSProviderVersions(d.Calls())
			t.Logf("real engine: %s: kubernetes provider %s: up %d resources, destroy %d deleted (%s)",
				entry, d.Env.Tools.KubernetesProvider, created, count(down.Summary.ResourceChanges, "delete"), steps)
		})
	}
}

// checkStateLayout: the stack's state is where the DIY backend's layout puts it:
// .pulumi/stacks/<stack>.json in the legacy layout, .pulumi/stacks/<project>/<stack>.json in the
// project layout (pulumi pkg backend/diy store.go).
func (d *Deployment) checkStateLayout(legacy bool) {
	stacks := filepath.Join(d.Env.Backend(), ".pulumi", "stacks")
	file := filepath.Join(stacks, offline.Project, d.name+".json")
	if legacy {
		file = filepath.Join(stacks, d.name+".json")
	}
	if _, err := os.Stat(file); err != nil {
		found, _ := filepath.Glob(filepath.Join(stacks, "*", "*.json"))
		top, _ := filepath.Glob(filepath.Join(stacks, "*.json"))
		d.t.Errorf("%s: the DIY backend (legacy layout %v) has no state at %s: %v (state files: %v)", d.name, legacy, file, err, append(top, found...))
	}
}

// checkNoChanges: a second `pulumi up` changes nothing.
func (d *Deployment) checkNoChanges(ctx context.Context) {
	if _, err := d.Stack.Up(ctx, optup.ExpectNoChanges(), optup.ProgressStreams(&d.Log)); err != nil {
		d.Fail("a second pulumi up changed something", err)
	}
}

// stepTimes are the wall times of a stack's steps, for its log line: where a package's minutes go.
type stepTimes struct {
	last  time.Time
	times []string
}

func (s *stepTimes) done(step string) {
	now := time.Now()
	s.times = append(s.times, fmt.Sprintf("%s %.0f s", step, now.Sub(s.last).Seconds()))
	s.last = now
}

func (s *stepTimes) String() string { return strings.Join(s.times, ", ") }
