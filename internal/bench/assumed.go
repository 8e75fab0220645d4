package bench

import (
	"fmt"
	"regexp"
	"strings"
)

// nccl-tests' row shapes by version, for rows whose column header is not in the log (a paste cut
// above the table): NVIDIA/nccl-tests src/common.cu and src/util.cu. A row is the size, the
// element count, the type, what identifies the operation, then per half (out-of-place, in-place)
// time, algbw, busbw and the check column:
//
//	2.13 and later:  size count type redop root  (time algbw busbw #wrong) × 2     13 fields,
//	                 12 where the redop is blank (2.13.0 to 2.13.3, hypercube)
//	2.0 to 2.12:     size count type [redop] [root]  (time algbw busbw error) × 2   11 to 13
//
// The check column tells the eras apart: before 2.13 it is the largest deviation printed with
// one significant digit ("0e+00", "%5.0le"); from 2.13 a count of wrong elements ("0", "%5g").
var (
	oldErrorToken = regexp.MustCompile(`^\de[+-]\d\d$`)
	ncclTypes     = map[string]bool{"int8": true, "uint8": true, "int32": true, "uint32": true, "int64": true, "uint64": true,
		"half": true, "float": true, "double": true, "bfloat16": true, "f8e4m3": true, "f8e5m2": true}
	redops = map[string]bool{"sum": true, "prod": true, "max": true, "min": true, "avg": true, "mulsum": true, "none": true}
)

// assumeColumns is the header a row's shape implies when the log has none, and what was assumed
// in words; ok false when the fields are no nccl-tests row.
func assumeColumns(f []string) (c *columns, assumed string, ok bool) {
	if len(f) < 11 || !digits(f[0]) || !digits(f[1]) || !ncclTypes[f[2]] {
		return nil, "", false
	}
	check := f[len(f)-1]
	old := oldErrorToken.MatchString(check)
	half := []string{"time", "algbw", "busbw", "#wrong"}
	if old {
		half[3] = "error"
	}
	identity := []string{"size", "count", "type"}
	switch n := len(f); {
	case n == 13 && redops[f[3]]:
		identity = append(identity, "redop", "root") // 2.13+, or before it reduce's redop and root
	case n == 12 && redops[f[3]]:
		identity = append(identity, "redop") // before 2.13: all_reduce, reduce_scatter
	case n == 12:
		identity = append(identity, "root") // a blank redop (2.13.0-2.13.3) or, before 2.13, broadcast's root
	case n == 11 && old:
		// before 2.13: all_gather, sendrecv, alltoall's blank redop
	default:
		return nil, "", false
	}
	names := append(append(append([]string{}, identity...), half...), half...)
	c, ok = parseHeader(names)
	if !ok {
		return nil, "", false
	}
	era := "2.13 or later (a #wrong count)"
	if old {
		era = "before 2.13 (the largest deviation, \"error\")"
	}
	return c, fmt.Sprintf("no column header in the log: its rows read as nccl-tests %s, %d fields: %s", era, len(f), strings.Join(names, " ")), true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
