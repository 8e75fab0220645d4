package bench

import (
	"fmt"

	"github.com/gpucluster/gpucluster/components/topology"
)

// errorTolerance is the largest deviation nccl-tests before 2.13 accepted for a type, the value
// its "error" column is judged against (src/common.cu, DeltaMaxValue: half and bfloat16 1e-2,
// float 1e-5, double 1e-12; integers any deviation at all).
func errorTolerance(typ string) (float64, bool) {
	switch typ {
	case "half", "float16", "bfloat16":
		return 1e-2, true
	case "float", "float32":
		return 1e-5, true
	case "double", "float64":
		return 1e-12, true
	case "int8", "uint8", "int32", "uint32", "int64", "uint64", "int", "char":
		return 0, true
	}
	return 0, false
}

// failingRows are the rows of one kind of failure (wrong elements, or a deviation beyond the
// type's tolerance) in one half of the table.
type failingRows struct {
	what, half string
	rows       int
	first      Row
	firstValue string
	from, to   int64 // sizes
}

// judgeRows fails the run once per kind of failing row (a run with wrong data prints it at
// every size: one line says it, with how many rows and where).
func (r *Result) judgeRows(fail func(format string, a ...any)) {
	var kinds []*failingRows
	note := func(what, half string, row Row, value string) {
		for _, k := range kinds {
			if k.what == what && k.half == half {
				k.rows++
				k.from, k.to = min(k.from, row.Bytes), max(k.to, row.Bytes)
				return
			}
		}
		kinds = append(kinds, &failingRows{what: what, half: half, rows: 1, first: row, firstValue: value, from: row.Bytes, to: row.Bytes})
	}
	for _, row := range r.Rows {
		for _, half := range []struct {
			name string
			m    *Measure
		}{{"out-of-place", row.OutOfPlace}, {"in-place", row.InPlace}} {
			m := half.m
			switch {
			case m == nil:
			case m.Wrong != nil && *m.Wrong > 0:
				printed := m.WrongAsPrinted
				if printed == "" {
					printed = fmt.Sprint(*m.Wrong)
				}
				note("wrong elements", half.name, row, printed)
			case m.MaxError != nil:
				if tol, ok := errorTolerance(row.Type); ok && *m.MaxError > tol {
					note(fmt.Sprintf("an error above %s's tolerance (%g)", row.Type, tol), half.name, row, fmt.Sprintf("%g", *m.MaxError))
				}
			}
		}
	}
	for _, k := range kinds {
		sizes := topology.HumanSize(k.from)
		if k.to != k.from {
			sizes += " to " + topology.HumanSize(k.to)
		}
		fail("%d row(s) with %s %s, %s (first at line %d: %s at %s): the collective returned wrong data; suspect the GPU, its memory or the fabric before any bandwidth",
			k.rows, k.what, k.half, sizes, k.first.Line, k.firstValue, topology.HumanSize(k.first.Bytes))
	}
}
