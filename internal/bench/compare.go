package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Run is one result in a comparison, with the label it is shown under.
type Run struct {
	Label string
	*Result
}

// LoadRuns reads the results `bench report --json` wrote to one file (a list, or one result).
// A file with several runs labels them name#1, name#2.
func LoadRuns(name string, data []byte) ([]Run, error) {
	var results []*Result
	trimmed := bytes.TrimSpace(data)
	var err error
	if bytes.HasPrefix(trimmed, []byte("[")) {
		err = json.Unmarshal(trimmed, &results)
	} else {
		var r Result
		err = json.Unmarshal(trimmed, &r)
		results = []*Result{&r}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not the JSON of gpucluster bench report --json: %v", name, err)
	}
	label := strings.TrimSuffix(filepath.Base(name), ".json")
	var runs []Run
	for i, r := range results {
		if r == nil || (len(r.Rows) == 0 && r.Training == nil) {
			return nil, fmt.Errorf("%s: result %d has neither rows nor a training run: write it with gpucluster bench report --json", name, i+1)
		}
		l := label
		if len(results) > 1 {
			l = fmt.Sprintf("%s#%d", label, i+1)
		}
		runs = append(runs, Run{Label: l, Result: r})
	}
	return runs, nil
}

// Sizes are every message size any run measured out of place, ascending.
func Sizes(runs []Run) []int64 {
	var out []int64
	for _, r := range runs {
		for _, row := range r.Rows {
			if row.OutOfPlace != nil && !slices.Contains(out, row.Bytes) {
				out = append(out, row.Bytes)
			}
		}
	}
	slices.Sort(out)
	return out
}

// BusBW is a run's out-of-place busbw at a size, if measured.
func (r Run) BusBW(size int64) (float64, bool) {
	if row := r.rowAt(size); row != nil && row.OutOfPlace != nil {
		return row.OutOfPlace.BusBW, true
	}
	return 0, false
}
