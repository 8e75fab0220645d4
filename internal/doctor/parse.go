// Package doctor reads what an NCCL job actually did (its NCCL_DEBUG=INFO log and
// `nvidia-smi topo -m`) and says whether it used NVLink and EFA, or silently fell back, and why.
package doctor

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line formats, as NCCL prints them (NCCL user guide, "Environment variables: NCCL_DEBUG";
// src/init.cc, src/transport/*.cc) and aws-ofi-nccl (src/nccl_ofi_net.cpp):
//
//	host:pid:tid [cudaDev] NCCL INFO <message>
//	host:pid:tid [cudaDev] NCCL WARN <message>
//
// anywhere in a line: pod-name prefixes, `[1,0]<stdout>:` from mpirun and timestamps before it
// are ignored, and so is everything that does not match (application output, truncated lines).
var (
	ncclPrefix   = regexp.MustCompile(`([^\s:\]>|]+):(\d+):(\d+) \[(\d+)\]$`) // what stands before " NCCL INFO"
	versionRe    = regexp.MustCompile(`NCCL version ([0-9][0-9A-Za-z.+_-]*)`)
	commRe       = regexp.MustCompile(`comm (0x[0-9a-f]+) rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)? busId ([0-9a-f]+)(?: commId (0x[0-9a-f]+))? - Init (START|COMPLETE)`)
	nodesRe      = regexp.MustCompile(`comm (0x[0-9a-f]+) rank \d+ nRanks \d+ nNodes (\d+) localRanks (\d+) localRank \d+`)
	channelRe    = regexp.MustCompile(`Channel (\d+)/\d+ : (\d+)\[[0-9a-f]+\] -> (\d+)\[[0-9a-f]+\](?: \[(send|receive)\])? via (.+?)\s*$`)
	collChanRe   = regexp.MustCompile(`(\d+) coll channels`)
	pluginRe     = regexp.MustCompile(`(?:Initializing|Using) aws-ofi-nccl ([0-9][0-9A-Za-z.+_-]*)`)
	loadedRe     = regexp.MustCompile(`NET/Plugin: Loaded (?:net|coll) plugin ([^(]+?) \(v?(\d+)\)`)
	usingNetRe   = regexp.MustCompile(`Using network (.+)$`)
	timingsRe    = regexp.MustCompile(`Init timings.*? total ([0-9.]+) \(.*?bootstrap ([0-9.]+)`)
	envSetRe     = regexp.MustCompile(`((?:NCCL|FI)_[A-Z0-9_]+) set by environment to (\S+)`)
	cudaErrorRe  = regexp.MustCompile(`(?i)cuda (?:error|failure) (\d+)|'system not yet initialized'|system not yet initialized`)
	unreachableR = regexp.MustCompile(`FI_EHOSTUNREACH|Unresponsive receiver|EHOSTUNREACH`)
	netDevice    = regexp.MustCompile(`/[0-9]+\b`)
)

// Log is what a parse found.
type Log struct {
	Lines        int // lines read
	NCCLLines    int // lines that were NCCL output
	Version      string
	Plugin       string // net plugin name (e.g. "AWS Libfabric"), "" for NCCL's internal one
	PluginVer    string
	Network      string // "Using network …": AWS Libfabric, Socket, IB
	NoProviders  bool   // aws-ofi-nccl: "No eligible providers were found"
	Unreachable  []string
	CUDAErrors   []string
	Env          map[string]string // variables NCCL reports as set by the environment
	Comms        map[string]*Comm  // by commId (or comm pointer when NCCL prints no commId)
	BootstrapSec float64           // the slowest bootstrap of the Init timings lines
	InitSec      float64
	Warnings     []string
	// CutLines are lines longer than maxLine, read only in their first maxLine bytes.
	CutLines []CutLine
	// UnreadLines are the numbers of lines skipped as binary (not UTF-8, or holding NUL).
	UnreadLines []int
}

// CutLine is one over-long line: its number and how many bytes past maxLine were not read.
type CutLine struct {
	Line     int   `json:"line"`
	BytesCut int64 `json:"bytesCut"`
}

// Comm is one communicator.
type Comm struct {
	ID         string
	Ranks      int
	Nodes      int // from "nNodes", 0 when NCCL did not print it
	LocalRanks int
	Channels   int
	rankHost   map[int]string
	rankDev    map[int]int
	Edges      map[string]int  // "intra|inter transport" → connections seen
	Peers      map[peerKey]int // rank pair and transport → channels
	seen       map[[3]int]bool // channel, from, to already counted: both ends log a NET connection
}

type peerKey struct {
	From, To int
	Where    string
	Via      string
}

// ErrNotNCCL is returned for input that holds no NCCL output.
type ErrNotNCCL struct{ Reason string }

func (e ErrNotNCCL) Error() string { return e.Reason }

// maxLine bounds what is kept of one line; the rest of a longer line is cut and reported.
const maxLine = 1 << 20

// Parse reads an NCCL_DEBUG=INFO log of any number of ranks, interleaved.
func Parse(r io.Reader) (*Log, error) {
	l := &Log{Env: map[string]string{}, Comms: map[string]*Comm{}}
	current := map[string]*Comm{} // host:pid → communicator being initialised
	lr := newLineReader(r)
	binary := 0
	for {
		raw, cut, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		l.Lines++
		if cut > 0 {
			l.CutLines = append(l.CutLines, CutLine{Line: l.Lines, BytesCut: cut})
		}
		line := string(raw)
		if !utf8.ValidString(line) || strings.ContainsRune(line, 0) {
			binary++
			l.UnreadLines = append(l.UnreadLines, l.Lines)
			continue
		}
		if l.Version == "" && strings.Contains(line, "NCCL version") {
			if m := versionRe.FindStringSubmatch(line); m != nil {
				l.Version = m[1]
			}
		}
		host, pid, level, msg, ok := splitNCCL(line)
		if !ok {
			continue
		}
		l.NCCLLines++
		proc := host + ":" + pid
		l.parseMessage(msg, level)
		if c := match(msg, "Init ", commRe); c != nil {
			id := c[6]
			if id == "" {
				id = c[1]
			}
			comm := l.Comms[id]
			if comm == nil {
				comm = &Comm{ID: id, rankHost: map[int]string{}, rankDev: map[int]int{}, Edges: map[string]int{}, Peers: map[peerKey]int{}, seen: map[[3]int]bool{}}
				l.Comms[id] = comm
			}
			rank := atoi(c[2])
			comm.Ranks, comm.rankHost[rank], comm.rankDev[rank] = atoi(c[3]), host, atoi(c[4])
			if c[7] == "START" {
				current[proc] = comm
			}
			continue
		}
		comm := current[proc]
		if comm == nil {
			continue
		}
		if n := match(msg, "nNodes", nodesRe); n != nil {
			comm.Nodes, comm.LocalRanks = atoi(n[2]), atoi(n[3])
		}
		if n := match(msg, "coll channels", collChanRe); n != nil {
			comm.Channels = max(comm.Channels, atoi(n[1]))
		}
		if ch := match(msg, "Channel ", channelRe); ch != nil {
			comm.Channels = max(comm.Channels, atoi(ch[1])+1)
			from, to := atoi(ch[2]), atoi(ch[3])
			comm.edge(atoi(ch[1]), from, to, ch[5], host)
		}
	}
	switch {
	case l.Lines == 0:
		return nil, ErrNotNCCL{"the log is empty"}
	case binary > l.Lines/2:
		return nil, ErrNotNCCL{"the input is binary, not a text log"}
	case l.NCCLLines == 0:
		return nil, ErrNotNCCL{fmt.Sprintf("no NCCL output in %d lines: run the job with NCCL_DEBUG=INFO and pass its log", l.Lines)}
	}
	return l, nil
}

// splitNCCL finds "host:pid:tid [dev] NCCL INFO|WARN message" anywhere in a line.
func splitNCCL(line string) (host, pid, level, msg string, ok bool) {
	i := strings.Index(line, "] NCCL ")
	if i < 0 || len(line) < i+12 {
		return "", "", "", "", false
	}
	level = line[i+7 : i+11]
	if level != "INFO" && level != "WARN" || line[i+11] != ' ' {
		return "", "", "", "", false
	}
	m := ncclPrefix.FindStringSubmatch(line[:i+1])
	if m == nil {
		return "", "", "", "", false
	}
	return m[1], m[2], level, line[i+12:], true
}

// match runs re only on messages holding key: most lines are channel lines, and a substring
// test is far cheaper than a regular expression.
func match(msg, key string, re *regexp.Regexp) []string {
	if !strings.Contains(msg, key) {
		return nil
	}
	return re.FindStringSubmatch(msg)
}

func (l *Log) parseMessage(msg, level string) {
	if strings.HasPrefix(msg, "Channel ") {
		return // the hot path: nothing below applies to channel lines
	}
	if m := match(msg, "aws-ofi-nccl", pluginRe); m != nil {
		l.Plugin, l.PluginVer = "AWS Libfabric", m[1]
	}
	if m := match(msg, "NET/Plugin", loadedRe); m != nil && l.Plugin == "" {
		l.Plugin = strings.TrimSpace(m[1])
	}
	if m := match(msg, "Using network", usingNetRe); m != nil {
		l.Network = strings.TrimSpace(m[1])
	}
	if strings.Contains(msg, "No eligible providers were found") {
		l.NoProviders = true
	}
	if m := unreachableR.FindString(msg); m != "" {
		l.Unreachable = append(l.Unreachable, strings.TrimSpace(msg))
	}
	if m := cudaErrorRe.FindString(msg); m != "" {
		l.CUDAErrors = append(l.CUDAErrors, strings.TrimSpace(msg))
	}
	if m := match(msg, "set by environment", envSetRe); m != nil {
		l.Env[m[1]] = m[2]
	}
	if m := match(msg, "Init timings", timingsRe); m != nil {
		total, _ := strconv.ParseFloat(m[1], 64)
		boot, _ := strconv.ParseFloat(m[2], 64)
		if boot > l.BootstrapSec {
			l.BootstrapSec, l.InitSec = boot, total
		}
	}
	if level == "WARN" && len(l.Warnings) < 20 {
		l.Warnings = append(l.Warnings, strings.TrimSpace(msg))
	}
}

// edge records one channel connection, as intra-node or inter-node: ranks on different hosts
// are inter-node; when the peer's host is unknown, a NET transport counts as inter-node.
func (c *Comm) edge(channel, from, to int, via, host string) {
	via = netDevice.ReplaceAllString(via, "/<n>") // one row per transport, not per NIC
	key := [3]int{channel, from, to}
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	peer := to
	if h, ok := c.rankHost[from]; ok && h != host {
		peer = from
	}
	where := "intra"
	if ph, ok := c.rankHost[peer]; ok {
		if ph != host {
			where = "inter"
		}
	} else if strings.HasPrefix(via, "NET/") {
		where = "inter"
	}
	c.Edges[where+"|"+via]++
	c.Peers[peerKey{from, to, where, via}]++
}

// Hosts is the number of distinct hosts (pods) the communicator's ranks printed from.
func (c *Comm) Hosts() int {
	seen := map[string]bool{}
	for _, h := range c.rankHost {
		seen[h] = true
	}
	return len(seen)
}

// AllOnDevice0 says every rank drives CUDA device 0: one GPU per process (per pod).
func (c *Comm) AllOnDevice0() bool {
	if len(c.rankDev) < 2 {
		return false
	}
	for _, d := range c.rankDev {
		if d != 0 {
			return false
		}
	}
	return true
}

// SortedComms lists the communicators, largest first, then by id.
func (l *Log) SortedComms() []*Comm {
	out := make([]*Comm, 0, len(l.Comms))
	for _, c := range l.Comms {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ranks != out[j].Ranks {
			return out[i].Ranks > out[j].Ranks
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
