package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpucluster/gpucluster/internal/bench"
	"github.com/gpucluster/gpucluster/internal/benchrun"
)

// cmdCompare shows runs side by side: a Markdown table on stdout and, with --svg, a chart.
func cmdCompare(args []string, stdout, stderr io.Writer) int {
	c := newCLI("bench compare", "bench compare RESULT.json|RUN-DIR ... [--svg FILE]", stdout, stderr)
	svg := c.fs.String("svg", "", "also draw busbw against message size into this SVG file (a new file, or one compare wrote)")
	files, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if len(files) == 0 {
		return c.fail("give two or more result files (gpucluster bench report -o json > run.json writes one)")
	}
	var runs []bench.Run
	for _, f := range files {
		f = runResult(f)
		raw, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "gpucluster bench compare: %v\n", err)
			return exitUnreadable
		}
		rs, err := bench.LoadRuns(f, raw)
		if err != nil {
			fmt.Fprintf(stderr, "gpucluster bench compare: %v\n", err)
			return exitUnreadable
		}
		runs = append(runs, rs...)
	}
	if len(runs) < 2 {
		fmt.Fprintf(stderr, "gpucluster bench compare: %d run in %v: give at least two (gpucluster bench report --json writes one file per log)\n", len(runs), files)
		return 2
	}
	if *svg != "" && len(bench.Sizes(runs)) == 0 {
		fmt.Fprintln(stderr, "gpucluster bench compare: --svg draws busbw against message size, and no run has an nccl-tests table")
		return 2
	}
	if *svg != "" {
		if err := writeChart(*svg, compareSVG(runs)); err != nil {
			fmt.Fprintf(stderr, "gpucluster bench compare: %v\n", err)
			return 2
		}
	}
	fmt.Fprint(stdout, compareMarkdown(runs))
	return 0
}

// writeChart writes the chart to a new file, or replaces a chart compare wrote before; any other
// file is the user's and is left alone.
func writeChart(path, svg string) error {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !info.Mode().IsRegular():
		return fmt.Errorf("--svg %s is not a regular file: choose a new file name", path)
	default:
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(old, []byte(svgMarker)) {
			return fmt.Errorf("--svg %s exists and is not a chart gpucluster wrote: choose a new file name (nothing was written)", path)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gpucluster-chart-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(svg); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// runResult is the result file a compare argument names: a file as it is; a bench run's
// directory, its result.json; a stack's results directory (results/<stack>), its newest run's
// (run directories are named by their UTC start time, so the last in order is the newest).
func runResult(arg string) string {
	if st, err := os.Stat(arg); err != nil || !st.IsDir() {
		return arg
	}
	if _, err := os.Stat(filepath.Join(arg, benchrun.ResultJSON)); err == nil {
		return filepath.Join(arg, benchrun.ResultJSON)
	}
	runs, _ := filepath.Glob(filepath.Join(arg, "*", benchrun.ResultJSON))
	if len(runs) == 0 {
		return filepath.Join(arg, benchrun.ResultJSON) // read, and said missing
	}
	return runs[len(runs)-1]
}
