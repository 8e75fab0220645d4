package bench

import (
	"fmt"

	"github.com/gpucluster/gpucluster/components/topology"
)

// errorTolerance is the largest deviation per rank nccl-tests before 2.13 accepted for a type:
// its "error" column is judged against it times (nranks − 1) (src/common.cu, DeltaMaxValue:
// half and bfloat16 1e-2, float 1e-5, double 1e-12; integers any deviation at all).
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

// inPlaceUnchecked are the tests whose in-place check nccl-tests before 2.13.1 ignores.
var inPlaceUnchecked = map[string]bool{"alltoall_perf": true, "sendrecv_perf": true}

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
// every size: one line says it, with how many rows and where). An "error" column above the
// type's tolerance where nccl-tests' own footer counted no out-of-bounds value is not data
// corruption: the test judged those rows itself and did not count them (nccl-tests before 2.13
// checks alltoall's in-place half, which NCCL does not define, against the out-of-place
// expectation); note says so instead.
func (r *Result) judgeRows(fail, note func(format string, a ...any)) {
	footerClean := r.OutOfBounds != nil && *r.OutOfBounds == 0
	test := r.Collective
	if test == "" {
		test = r.Binary
	}
	var kinds []*failingRows
	add := func(what, half string, row Row, value string) {
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
				add("wrong elements", half.name, row, printed)
			case m.MaxError != nil && half.name == "in-place" && inPlaceUnchecked[test]:
				// nccl-tests before 2.13.1 prints this half's deviation and ignores it: NCCL has no
				// in-place alltoall or sendrecv (src/alltoall.cu, src/sendrecv.cu: reportErrors =
				// in_place ? 0 : 1; 2.13.1 prints N/A).
			case m.MaxError != nil:
				tol, ok := errorTolerance(row.Type)
				if r.Ranks > 1 {
					tol *= float64(r.Ranks - 1) // nccl-tests' own bound: the type's tolerance × (nranks − 1)
				}
				if ok && *m.MaxError > tol {
					add(fmt.Sprintf("an error above %s's tolerance (%g)", row.Type, tol), half.name, row, fmt.Sprintf("%g", *m.MaxError))
				}
			}
		}
	}
	for _, k := range kinds {
		sizes := topology.HumanSize(k.from)
		if k.to != k.from {
			sizes += " to " + topology.HumanSize(k.to)
		}
		if footerClean && k.what != "wrong elements" {
			note("%d row(s) with %s %s, %s (first at line %d: %s at %s), yet nccl-tests' own check counted 0 out-of-bounds values: not counted as wrong data",
				k.rows, k.what, k.half, sizes, k.first.Line, k.firstValue, topology.HumanSize(k.first.Bytes))
			continue
		}
		fail("%d row(s) with %s %s, %s (first at line %d: %s at %s): the collective returned wrong data; suspect the GPU, its memory or the fabric before any bandwidth",
			k.rows, k.what, k.half, sizes, k.first.Line, k.firstValue, topology.HumanSize(k.first.Bytes))
	}
}
