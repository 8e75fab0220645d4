// Package bench reads what a benchmark job printed: nccl-tests tables (text or the -J JSON file)
// and turns them into a result that can be judged and compared.
package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Measure is one half of an nccl-tests row (out-of-place or in-place).
type Measure struct {
	TimeUs float64 `json:"timeUs"`
	AlgBW  float64 `json:"algbwGBps"`
	BusBW  float64 `json:"busbwGBps"`
	// Wrong is the #wrong column; nil when the run did not check results (`-c 0` prints N/A).
	Wrong *int64 `json:"wrong"`
	// WrongAsPrinted is the #wrong column as nccl-tests wrote it ("1.04858e+06" once a count
	// outgrows its width): shown as written, never as a rounded-back integer.
	WrongAsPrinted string `json:"-"`
	// MaxError is the "error" column of nccl-tests before 2.13: the largest deviation from the
	// expected result, judged against the test's own tolerance for the row's type.
	MaxError *float64 `json:"maxError,omitempty"`
}

// Row is one message size of an nccl-tests table.
type Row struct {
	Bytes      int64    `json:"bytes"`
	Count      int64    `json:"count"`
	Type       string   `json:"type"`
	Op         string   `json:"redop"`
	Root       int      `json:"root"`
	OutOfPlace *Measure `json:"outOfPlace,omitempty"` // nil when only in-place ran (trace replay)
	InPlace    *Measure `json:"inPlace,omitempty"`
	Line       int      `json:"line,omitempty"`
}

// Table is one nccl-tests run: its header facts, rows and footer.
type Table struct {
	Collective string `json:"collective,omitempty"` // all_reduce_perf …; empty when the log does not say
	// Binary is the test binary the launcher's command line names (when the table does not).
	Binary string `json:"binary,omitempty"`
	// GivenNodes is the node count the user gave (bench report --nodes) for a log that does not
	// say it; the log's own count wins when it has one.
	GivenNodes   int    `json:"-"`
	TestsVersion string `json:"ncclTestsVersion,omitempty"`
	// NCCLLibrary is nccl-tests' nccl-library=NNNNN code (e.g. 22703 for 2.27.3).
	NCCLLibrary int `json:"ncclLibraryCode,omitempty"`
	// Ranks: the rank lines' count or their highest index + 1 (a listing cut to "Rank 71" is 72),
	// else processes × threads × GPUs from the launcher's -np and the header's nThread/nGpus.
	Ranks   int      `json:"ranks,omitempty"`
	Hosts   []string `json:"hosts,omitempty"`
	Devices []string `json:"devices,omitempty"` // distinct GPU names from the rank lines
	Rows    []Row    `json:"rows"`
	// Iters and AggIters are the timed iterations per size and the collectives each aggregates
	// (the header's "iters: N agg iters: M"); 0 when the log does not say.
	Iters    int `json:"iters,omitempty"`
	AggIters int `json:"aggIters,omitempty"`
	// Assumed says which nccl-tests row shape was read when the log holds no column header ("" when
	// it holds one).
	Assumed string `json:"assumedColumns,omitempty"`
	// Elided is true when rows were left out of the log (a "..." line): an excerpt, not a sweep.
	Elided bool `json:"elided,omitempty"`
	// OutOfBounds is nccl-tests' own check; nil when the footer is missing (a cut log).
	OutOfBounds *int64 `json:"outOfBounds,omitempty"`
	// AvgBusBW depends on which sizes were swept: reported, never compared.
	AvgBusBW *float64 `json:"avgBusbwGBps,omitempty"`
	Line     int      `json:"line"`
	// Skipped are lines inside the table that are not rows of it (launcher chatter such as Open
	// MPI's "7 more processes have sent help message …", interleaved stderr, a row cut by another
	// process's output): left out and reported, never a reason to lose the table.
	Skipped []SkippedLine `json:"skippedLines,omitempty"`

	threads, gpus, procs int // the header's nThread and nGpus, the launcher's -np (0: not said)
	rankLines            int // the rank lines read: fewer than Ranks when the listing was cut
}

// HostsListed is how many hosts the rank listing names when it lists every rank, 0 when it is
// cut (a listing cut to "Rank 71" names one host of a rack's 18) or absent: a cut listing says
// nothing of the node count.
func (t *Table) HostsListed() int {
	if t.rankLines < t.Ranks {
		return 0
	}
	return len(t.Hosts)
}

// ListingCut says the rank listing holds fewer lines than the ranks it numbers.
func (t *Table) ListingCut() bool { return t.rankLines > 0 && t.rankLines < t.Ranks }

// SkippedLine is one line of a table that was not read as a row, and why.
type SkippedLine struct {
	Line   int    `json:"line"`
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

// skip records a line of the current table that is not a row.
func (t *Table) skip(n int, line, reason string) {
	if len(line) > 160 {
		line = line[:160] + "…"
	}
	t.Skipped = append(t.Skipped, SkippedLine{Line: n, Text: line, Reason: reason})
}

// Perf is every nccl-tests table found in one log.
type Perf struct {
	Tables []Table `json:"tables"`
}

// launcherPrefix matches what launchers put before a process's output: Open MPI --tag-output
// "[1,0]<stdout>:", srun -l "0: " (" 0: " once there are ten tasks or more: the label is padded
// to the widest task id, NVIDIA/nccl-tests#290), pdsh/mpirun "1:0: "-style rank tags, and a
// bare rank tag "[0] " (NVIDIA/nccl#1453), which that launcher also puts where one printf of the
// row ends and the next begins ("-1[0]   1626.5").
var (
	launcherPrefix = regexp.MustCompile(`^(\[\d+,\d+\]<std(?:out|err)>:|\d+(?::\d+)?:(?:\s|$))`)
	bareRankTag    = regexp.MustCompile(`^\[\d+\](?:\s+|$)`)
	rankTag        = regexp.MustCompile(`\[\d+\]`)
	// SkyPilot's "(head, rank=0, pid=3808) " before each line of a node's output.
	skyPilotPrefix = regexp.MustCompile(`^\((?:head|worker\d*)[^()]*\brank=\d+[^()]*\) `)
)

// stripPrefix removes launcher and kubectl prefixes. Column alignment does not matter after
// that: rows are split on whitespace.
func stripPrefix(line string) string {
	// A padded srun label starts with spaces, as rows do: spaces are dropped only with a prefix.
	t := strings.TrimLeft(line, " ")
	out := t
	if out != "" && out[0] == '(' {
		if m := skyPilotPrefix.FindString(out); m != "" {
			out = out[len(m):]
		}
	}
	out = stripLauncher(out)
	if m := bareRankTag.FindString(out); m != "" {
		out = rankTag.ReplaceAllString(out[len(m):], " ") // the tag inside the row too
	}
	if out == t {
		return line
	}
	return out
}

// stripLauncher removes a kubectl timestamp and one launcher prefix from the start of line.
func stripLauncher(line string) string {
	// Both prefixes start with a digit or '[': most lines are decided by their first byte.
	if line == "" || line[0] != '[' && (line[0] < '0' || line[0] > '9') {
		return line
	}
	if end := kubectlTimeEnd(line); end > 0 {
		line = line[end:]
	}
	if line == "" || line[0] != '[' && (line[0] < '0' || line[0] > '9') {
		return line
	}
	if m := launcherPrefix.FindString(line); m != "" {
		line = line[len(m):]
	}
	return line
}

// kubectlTimeEnd is where what kubectlTime matches at the start of line ends (its trailing
// space included), 0 if it does not: read by hand, since a timestamped log puts one on every
// line. FuzzKubectlTimeEndMatchesRegexp holds it to kubectlTime.
func kubectlTimeEnd(line string) int {
	const shape = "dddd-dd-ddTdd:dd:dd" // d: a digit
	if len(line) < len(shape) {
		return 0
	}
	for i := 0; i < len(shape); i++ {
		if shape[i] == 'd' && !isDigit(line[i]) || shape[i] != 'd' && line[i] != shape[i] {
			return 0
		}
	}
	p := len(shape)
	if p < len(line) && line[p] == '.' { // fractional seconds, taken only if digits follow
		q := p + 1
		for q < len(line) && isDigit(line[q]) {
			q++
		}
		if q > p+1 {
			p = q
		}
	}
	switch {
	case p < len(line) && line[p] == 'Z':
		p++
	case p+6 <= len(line) && (line[p] == '+' || line[p] == '-') && isDigit(line[p+1]) && isDigit(line[p+2]) && line[p+3] == ':' && isDigit(line[p+4]) && isDigit(line[p+5]):
		p += 6
	default:
		return 0
	}
	if p < len(line) && line[p] == ' ' {
		return p + 1
	}
	return 0
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// columns is where the fields of a data row are, learned from the header line, because the
// header changed across nccl-tests versions (bytes/N/op/res in 2016, size/count/redop/error,
// then #wrong, per-iteration i_* columns, a timestamp).
type columns struct {
	names     []string
	size      int
	count     int
	typ       int
	op, root  int   // -1 when the version has no such column
	groups    []int // start of each measure group: out-of-place, in-place
	groupLen  int
	timestamp bool // two trailing tokens "YYYY-MM-DD HH:MM:SS"
}

func parseHeader(fields []string) (*columns, bool) {
	c := &columns{names: fields, size: -1, count: -1, typ: -1, op: -1, root: -1}
	for i, f := range fields {
		switch f {
		case "size", "bytes":
			c.size = i
		case "count", "N":
			c.count = i
		case "type":
			c.typ = i
		case "redop", "op":
			c.op = i
		case "root":
			c.root = i
		case "time", "cputime":
			c.groups = append(c.groups, i)
		case "timestamp":
			c.timestamp = i == len(fields)-1
		}
	}
	if c.size != 0 || c.count < 0 || c.typ < 0 || len(c.groups) == 0 || len(c.groups) > 2 {
		return nil, false
	}
	if len(c.groups) == 2 {
		c.groupLen = c.groups[1] - c.groups[0]
	} else {
		c.groupLen = len(fields) - c.groups[0]
		if c.timestamp {
			c.groupLen--
		}
	}
	if c.groupLen < 3 || fields[c.groups[0]+1] != "algbw" || fields[c.groups[0]+2] != "busbw" {
		return nil, false
	}
	// The row's identity comes first, the measures last: anything else is not a header.
	for _, i := range []int{c.count, c.typ, c.op, c.root} {
		if i >= c.groups[0] {
			return nil, false
		}
	}
	if c.width()-boolInt(c.timestamp) != len(fields) {
		return nil, false
	}
	return c, true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// width is how many whitespace-separated tokens a full data row has.
func (c *columns) width() int {
	n := c.groups[0] + len(c.groups)*c.groupLen
	if c.timestamp {
		n += 2
	}
	return n
}

var (
	// A Markdown rendering drops the leading '#' of nccl-tests' header lines: it is optional.
	// Rank lines: "#  Rank  0 Group  0 Pid  12345 on host device  0 [0x10] NVIDIA H100" (2.13+),
	// without Group (2019 to 2022) and without Pid (2017, 2018; NVIDIA/nccl-tests#5, #107).
	rankLine = regexp.MustCompile(`^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+)$`)
	// The header's threads and GPUs per process (-t, -g): "# nThread 1 nGpus 8 minBytes …".
	threadsRe = regexp.MustCompile(`nThread:?\s+(\d+)\s+nGpus:?\s+(\d+)`)
	// The same header line's iteration counts: "warmup iters: 5 iters: 100 agg iters: 1" (agg
	// since nccl-tests 2.10; 1 without it).
	itersRe = regexp.MustCompile(`warmup iters:\s*\d+\s+iters:\s*(\d+)(?:\s+agg iters:\s*(\d+))?`)
	// A launcher's process count: "mpirun -np 16 …", "srun -n 16", "--ntasks=16".
	procsRe = regexp.MustCompile(`(?:mpirun|mpiexec|srun)\b.*?\s(?:-np|-n|--np|--ntasks)[\s=](\d+)`)
	// The test's own -g and -t after its binary, for a log whose header line was lost.
	gpusFlagRe    = regexp.MustCompile(`_perf(?:_mpi)?\b.*?\s(?:-g|--ngpus)[\s=](\d+)`)
	threadsFlagRe = regexp.MustCompile(`_perf(?:_mpi)?\b.*?\s(?:-t|--nthreads)[\s=](\d+)`)
	// The test binary on a launcher's command line ("mpirun … /opt/nccl-tests/build/sendrecv_perf
	// -b 8 -e 1G"), for logs whose tables do not name their test.
	binaryRe   = regexp.MustCompile(`(?:^|[/\s])([a-z_]+_perf)(?:_mpi)?(?:\s|$)`)
	versionRe  = regexp.MustCompile(`^#\s*nccl-tests version (\S+)(?:.*nccl-library=(\d+))?`)
	startingRe = regexp.MustCompile(`^#\s*Collective test (?:starting|concluded):\s*(\S+)`)
	oobRe      = regexp.MustCompile(`^#?\s*Out of bounds values\s*:\s*(\d+)`)
	avgRe      = regexp.MustCompile(`^#?\s*Avg bus bandwidth\s*:\s*(\S+)`)
)

// ErrNoTable: the log holds no nccl-tests table (it may be a training log).
var ErrNoTable = errors.New("no nccl-tests table: no header line with size, count, type, time, algbw and busbw columns")

// ParsePerf reads nccl-tests text output from a job log. Lines that are not nccl-tests output
// (NCCL INFO lines, launcher chatter) are skipped; a line inside a table that starts like a row
// but does not fit its header is left out and reported in the table's Skipped, with its line
// and why, because a silently dropped row changes the result and a lost table loses all of it.
func ParsePerf(r io.Reader) (*Perf, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	p := &Perf{}
	var cur *Table
	var cols *columns
	var pending Table // header facts seen before the column header
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(stripPrefix(strings.TrimRight(sc.Text(), "\r")))
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			fields := strings.Fields(strings.TrimPrefix(line, "#"))
			if c, ok := parseHeader(fields); ok {
				t := pending
				t.Line = n
				p.Tables = append(p.Tables, t)
				cur, cols, pending = &p.Tables[len(p.Tables)-1], c, Table{}
				continue
			}
			if err := headerFact(&pending, cur, line); err != nil {
				if cur == nil {
					return nil, fmt.Errorf("line %d: %v", n, err)
				}
				cur.skip(n, line, err.Error())
			}
			continue
		}
		// Header lines a Markdown rendering stripped of their '#': the rank lines and the
		// column header (a sendrecv table once went unnamed and miscounted this way).
		if strings.Contains(line, "Rank") && rankLine.MatchString(line) {
			headerFact(&pending, cur, line)
			continue
		}
		if strings.Contains(line, "busbw") { // every header names the column (parseHeader)
			if c, ok := parseHeader(strings.Fields(line)); ok {
				t := pending
				t.Line = n
				p.Tables = append(p.Tables, t)
				cur, cols, pending = &p.Tables[len(p.Tables)-1], c, Table{}
				continue
			}
		}
		if strings.Contains(line, "_perf") { // every test binary's name ends so (binaryRe)
			if m := binaryRe.FindStringSubmatch(line); m != nil {
				pending.Binary = m[1]
				pending.procs, pending.gpus, pending.threads = 1, 1, 1 // nccl-tests' defaults, unless the line says
				if p := procsRe.FindStringSubmatch(line); p != nil {
					pending.procs, _ = strconv.Atoi(p[1])
				}
				if g := gpusFlagRe.FindStringSubmatch(line); g != nil {
					pending.gpus, _ = strconv.Atoi(g[1])
				}
				if t := threadsFlagRe.FindStringSubmatch(line); t != nil {
					pending.threads, _ = strconv.Atoi(t[1])
				}
			}
		}
		if (cur == nil || cur.AvgBusBW != nil) && !rowShaped(line) {
			continue // the table is closed by its footer
		}
		if cur != nil && (line == "..." || line == "…") {
			cur.Elided = true
			continue
		}
		if cur != nil && (oobRe.MatchString(line) || avgRe.MatchString(line)) {
			// the footer of early versions, printed without '#'
			if err := headerFact(&pending, cur, line); err != nil {
				cur.skip(n, line, err.Error())
			}
			continue
		}
		fields := strings.Fields(line)
		if _, err := strconv.ParseInt(fields[0], 10, 64); err != nil {
			continue // an NCCL INFO line or other output between rows
		}
		if cur == nil || cur.AvgBusBW != nil {
			c, assumed, ok := assumeColumns(fields)
			if !ok {
				continue
			}
			t := pending
			t.Line, t.Assumed = n, assumed
			p.Tables = append(p.Tables, t)
			cur, cols, pending = &p.Tables[len(p.Tables)-1], c, Table{}
		}
		row, err := cols.row(fields)
		if err != nil {
			cur.skip(n, line, fmt.Sprintf("%v (header at line %d: %s)", err, cur.Line, strings.Join(cols.names, " ")))
			continue
		}
		row.Line = n
		cur.Rows = append(cur.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", n+1, err)
	}
	if len(p.Tables) == 0 {
		return nil, ErrNoTable
	}
	for i := range p.Tables {
		if t := &p.Tables[i]; t.Ranks == 0 && t.procs > 0 && t.threads > 0 && t.gpus > 0 {
			t.Ranks = t.procs * t.threads * t.gpus // no rank line: what the command line and header say
		}
	}
	return p, nil
}

// headerFact records a '#' line that says something about the run: lines before a table
// (version, test name, ranks) go to the next table, footer lines to the current one.
func headerFact(next, cur *Table, line string) error {
	// Each expression behind the words every match of it holds: most '#' lines are ranks'.
	find := func(re *regexp.Regexp, words string) []string {
		if !strings.Contains(line, words) {
			return nil
		}
		return re.FindStringSubmatch(line)
	}
	if m := find(versionRe, "nccl-tests version "); m != nil {
		next.TestsVersion = m[1]
		if m[2] != "" {
			next.NCCLLibrary, _ = strconv.Atoi(m[2])
		}
	} else if m := find(startingRe, "Collective test "); m != nil {
		t := next
		if strings.Contains(line, "concluded") && cur != nil {
			t = cur
		}
		t.Collective = m[1]
	} else if m := find(rankLine, "Rank"); m != nil {
		index, _ := strconv.Atoi(m[1])
		next.Ranks = max(next.Ranks+1, index+1)
		next.rankLines++
		next.Hosts = appendNew(next.Hosts, m[2])
		next.Devices = appendNew(next.Devices, strings.TrimSpace(m[3]))
	} else if m := find(threadsRe, "nGpus"); m != nil {
		next.threads, _ = strconv.Atoi(m[1])
		next.gpus, _ = strconv.Atoi(m[2])
		if m := find(itersRe, "iters:"); m != nil {
			next.Iters, _ = strconv.Atoi(m[1])
			next.AggIters = 1
			if m[2] != "" {
				next.AggIters, _ = strconv.Atoi(m[2])
			}
		}
	} else if cur == nil {
		return nil // a footer with no table before it
	} else if m := find(oobRe, "Out of bounds values"); m != nil {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		cur.OutOfBounds = &v
	} else if m := find(avgRe, "Avg bus bandwidth"); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return fmt.Errorf("Avg bus bandwidth %q is not a number", m[1])
		}
		cur.AvgBusBW = &v
	}
	return nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func (c *columns) row(f []string) (Row, error) {
	var r Row
	full := c.width()
	inPlaceOnly := len(c.groups) == 2 && len(f) == full-c.groupLen
	if len(f) == full-1 && c.op >= 0 && isNumber(f[c.op]) {
		// Old alltoall and sendrecv rows leave the redop column blank (NVIDIA/nccl-tests#78).
		f = slices.Insert(slices.Clone(f), c.op, "")
	}
	if len(f) != full && !inPlaceOnly {
		return r, fmt.Errorf("%d fields where the header has %d", len(f), full)
	}
	var err error
	if r.Bytes, err = strconv.ParseInt(f[c.size], 10, 64); err != nil || r.Bytes < 0 {
		return r, fmt.Errorf("size %q is not a byte count", f[c.size])
	}
	if r.Count, err = strconv.ParseInt(f[c.count], 10, 64); err != nil || r.Count < 0 {
		return r, fmt.Errorf("count %q is not an element count", f[c.count])
	}
	r.Type = f[c.typ]
	if c.op >= 0 {
		r.Op = f[c.op]
	}
	r.Root = -1
	if c.root >= 0 {
		if r.Root, err = strconv.Atoi(f[c.root]); err != nil {
			return r, fmt.Errorf("root %q is not a rank", f[c.root])
		}
	}
	start := c.groups[0]
	if inPlaceOnly {
		m, err := c.measure(f[start : start+c.groupLen])
		r.InPlace = m
		return r, err
	}
	if r.OutOfPlace, err = c.measure(f[start : start+c.groupLen]); err != nil {
		return r, fmt.Errorf("out-of-place: %v", err)
	}
	if len(c.groups) == 2 {
		if r.InPlace, err = c.measure(f[c.groups[1] : c.groups[1]+c.groupLen]); err != nil {
			return r, fmt.Errorf("in-place: %v", err)
		}
	}
	return r, nil
}

// measure reads time, algbw, busbw and the check column. Numbers may be in exponent form
// (nccl-tests prints "1.2e+05" when a value outgrows its column).
func (c *columns) measure(f []string) (*Measure, error) {
	m := &Measure{}
	for i, dst := range []*float64{&m.TimeUs, &m.AlgBW, &m.BusBW} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%s %q is not a number", c.names[c.groups[0]+i], f[i])
		}
		*dst = v
	}
	if len(f) > 3 {
		check := f[3]
		if check != "N/A" {
			v, err := strconv.ParseFloat(check, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%s %q is not a count", c.names[c.groups[0]+3], check)
			}
			// Older versions print the largest deviation ("error"), where small values are
			// normal; a #wrong count says how many elements were wrong.
			switch c.names[c.groups[0]+3] {
			case "#wrong":
				w := int64(v)
				m.Wrong, m.WrongAsPrinted = &w, check
			case "error":
				m.MaxError = &v
			}
		}
	}
	return m, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// rowShaped says whether a line outside any table may be a row of one whose header was cut.
func rowShaped(line string) bool {
	return line != "" && isDigit(line[0])
}
