package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/gpucluster/gpucluster/infra/program"
)

// Deployment is one stack of the experiment in the user's Pulumi backend, driven with the
// Automation API. The program is the project's, run inline (program.RunEngine) exactly as
// `pulumi up` runs infra/main.go: the same stack file, the same configuration from the engine,
// the same clock judging the stack. The Pulumi CLI on PATH does the work, with the user's
// backend and credentials (PULUMI_BACKEND_URL, PULUMI_ACCESS_TOKEN, AWS_*: the environment).
type Deployment struct {
	Name  string
	stack auto.Stack
}

// ErrStackInUse is a stack the backend already holds resources for: not the experiment's to
// bring up, measure or destroy.
var ErrStackInUse = errors.New("already holds resources")

// Open creates the stack in the backend, or takes an empty one that is there (a `pulumi stack
// init` without an up): a stack that holds resources is not the experiment's, and its destroy
// must remove only what the experiment made. project is the project's directory (Pulumi.yaml), projectName its name.
func Open(ctx context.Context, project, projectName, name, stackFile string, now func() time.Time) (*Deployment, error) {
	run := program.RunEngine(stackFile, now)
	st, err := auto.NewStackInlineSource(ctx, name, projectName, run, auto.WorkDir(project))
	if err == nil {
		return &Deployment{Name: name, stack: st}, nil
	}
	if !auto.IsCreateStack409Error(err) {
		return nil, err
	}
	st, err = auto.SelectStackInlineSource(ctx, name, projectName, run, auto.WorkDir(project))
	if err != nil {
		return nil, err
	}
	n, err := resourceCount(ctx, st)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, fmt.Errorf("stack %s %w (%d): an experiment brings up and destroys only stacks of its own; destroy it first (pulumi destroy -s %s) or compare another", name, ErrStackInUse, n, name)
	}
	return &Deployment{Name: name, stack: st}, nil
}

// resourceCount is how many resources the backend holds for the stack.
func resourceCount(ctx context.Context, st auto.Stack) (int, error) {
	dep, err := st.Export(ctx)
	if err != nil {
		return 0, err
	}
	var d struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if len(dep.Deployment) == 0 {
		return 0, nil
	}
	if err := json.Unmarshal(dep.Deployment, &d); err != nil {
		return 0, fmt.Errorf("stack %s: its deployment: %w", st.Name(), err)
	}
	return len(d.Resources), nil
}

// Up brings the stack up, the engine's progress written to progress.
func (d *Deployment) Up(ctx context.Context, progress io.Writer) error {
	_, err := d.stack.Up(ctx, optup.ProgressStreams(progress), optup.ErrorProgressStreams(progress))
	return err
}

// Kubeconfig is the stack's kubeconfig output, as `pulumi stack output kubeconfig --show-secrets`.
func (d *Deployment) Kubeconfig(ctx context.Context) ([]byte, error) {
	out, err := d.stack.Outputs(ctx)
	if err != nil {
		return nil, err
	}
	v, ok := out["kubeconfig"]
	if !ok {
		return nil, fmt.Errorf("stack %s has no kubeconfig output", d.Name)
	}
	if s, ok := v.Value.(string); ok {
		return []byte(s), nil
	}
	return json.Marshal(v.Value)
}

// Destroy deletes every resource of the stack, the engine's progress written to progress.
func (d *Deployment) Destroy(ctx context.Context, progress io.Writer) error {
	_, err := d.stack.Destroy(ctx, optdestroy.ProgressStreams(progress), optdestroy.ErrorProgressStreams(progress))
	return err
}

// Remaining is how many resources the backend still holds for the stack (0 once destroyed).
func (d *Deployment) Remaining(ctx context.Context) (int, error) { return resourceCount(ctx, d.stack) }
