// Command gpucluster-charts renders the Helm charts of a stack for `gpucluster plan`, as
// pulumi-kubernetes's helm.sh/v4:Chart will render them at `pulumi up` (internal/charts/helmrender).
// It reads charts.Input as JSON on its standard input and writes charts.Output on its standard
// output. It is a program of its own so that the gpucluster CLI does not carry Helm (package
// charts says why); gpucluster finds it beside itself, builds it from a checkout, or on PATH.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/gpucluster/gpucluster/internal/charts"
	"github.com/gpucluster/gpucluster/internal/charts/helmrender"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "usage: %s < input.json (gpucluster plan runs it; it takes no arguments)\n", charts.ProgramName)
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", charts.ProgramName, err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	var in charts.Input
	if err := json.NewDecoder(stdin).Decode(&in); err != nil {
		return fmt.Errorf("reading the charts to render: %w", err)
	}
	if in.Protocol != charts.Protocol {
		return fmt.Errorf("gpucluster speaks protocol %d, this %s %d: install both from the same release", in.Protocol, charts.ProgramName, charts.Protocol)
	}
	r := helmrender.New("")
	out := charts.Output{Protocol: charts.Protocol, Charts: make([]charts.Rendered, 0, len(in.Charts))}
	for _, req := range in.Charts {
		out.Charts = append(out.Charts, r.Render(req))
	}
	return json.NewEncoder(stdout).Encode(out)
}
