// Package efareading reads the EFA counter blocks gpucluster's benchmark jobs write into their
// logs (topology.EFACounterMarker) and says what the devices counted during the run: bench
// report holds it to what the collective had to move, the doctor to whether anything crossed
// EFA at all.
package efareading

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Readings are the EFA counter blocks of a job's log (topology.EFACounterMarker): per node,
// per device, the reading before the measured run and the one after it.
type Readings struct {
	nodes map[string]map[string]*[2]map[string]uint64 // node → device → [before, after]
	// Unread are marker lines that could not be read, with why; NoReader the workers that said no
	// reader answered them (topology.EFACountersNoReader).
	Unread   []string
	NoReader []string
}

// Parse reads the counter blocks of a log, whatever prefix a launcher put before them (Open
// MPI's --tag-output, kubectl's timestamps). It returns nil when the log has none.
func Parse(r io.Reader) (*Readings, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var e *Readings
	n := 0
	for sc.Scan() {
		n++
		e = e.Line(n, sc.Text())
	}
	return e, sc.Err()
}

// Holds reports whether a line may be part of a block (a reading, or a worker's word that no
// reader answered): the one test a reader of every line of a log needs.
func Holds(line string) bool {
	return strings.Contains(line, topology.EFACounterMarker) || strings.Contains(line, topology.EFACountersNoReader)
}

// Line reads line n of a log into e, which it returns: a new Readings for the first line of a
// block when e is nil, e itself for a line of none.
func (e *Readings) Line(n int, line string) *Readings {
	i := strings.Index(line, topology.EFACounterMarker+" ")
	j := strings.Index(line, topology.EFACountersNoReader)
	if i < 0 && j < 0 {
		return e
	}
	if e == nil {
		e = &Readings{nodes: map[string]map[string]*[2]map[string]uint64{}}
	}
	if i < 0 {
		if host := strings.TrimSpace(line[j+len(topology.EFACountersNoReader):]); !slices.Contains(e.NoReader, host) {
			e.NoReader = append(e.NoReader, host)
		}
		return e
	}
	if err := e.add(line[i+len(topology.EFACounterMarker):]); err != nil {
		e.Unread = append(e.Unread, fmt.Sprintf("line %d: %v", n, err))
	}
	return e
}

// Nodes is how many nodes a reading names.
func (e *Readings) Nodes() int { return len(e.nodes) }

func (e *Readings) add(fields string) error {
	var phase, node, device string
	values := map[string]uint64{}
	for _, f := range strings.Fields(fields) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("%q is not name=value", f)
		}
		switch k {
		case "phase":
			phase = v
		case "node":
			node = v
		case "device":
			device = v
		default:
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("counter %s=%q is not a count", k, v)
			}
			values[k] = n
		}
	}
	slot := map[string]int{topology.EFAPhaseBefore: 0, topology.EFAPhaseAfter: 1}
	i, ok := slot[phase]
	switch {
	case !ok:
		return fmt.Errorf("phase %q is neither %s nor %s", phase, topology.EFAPhaseBefore, topology.EFAPhaseAfter)
	case node == "" || device == "":
		return fmt.Errorf("a reading without its node or device")
	}
	if e.nodes[node] == nil {
		e.nodes[node] = map[string]*[2]map[string]uint64{}
	}
	if e.nodes[node][device] == nil {
		e.nodes[node][device] = &[2]map[string]uint64{}
	}
	r := e.nodes[node][device]
	if r[i] == nil {
		r[i] = values
		return nil
	}
	// Several pods of one node (one GPU per pod) read the same device, and their logs come in
	// no order of time. The counters only grow, so of two readings before the run the smaller
	// count is the earlier, and of two after it the larger the later: the span of the run,
	// whichever log is read first.
	for name, v := range values {
		if old, ok := r[i][name]; ok && (i == 0 && v < old || i == 1 && v > old) {
			r[i][name] = v
		}
	}
	return nil
}

// Traffic is what the EFA devices counted during a run, per node and in all. The event
// counts are nil when the nodes' driver does not keep them (before Linux 6.17, EFA driver 2.17).
type Traffic struct {
	Nodes   []Node `json:"nodes"`
	TxBytes uint64 `json:"txBytes"`
	RxBytes uint64 `json:"rxBytes"`
	Events
	// NeededBytes is the least the timed iterations had to send from the nodes in all, and
	// NeededHow how it was counted; 0 when the run does not say (another test, no header).
	NeededBytes int64  `json:"neededBytes,omitempty"`
	NeededHow   string `json:"neededHow,omitempty"`
	// Problems are readings that could not be used, with why.
	Problems []string `json:"problems,omitempty"`
}

// Events are the network counters' changes.
type Events struct {
	RetransPkts         *uint64 `json:"retransPkts,omitempty"`
	RetransTimeouts     *uint64 `json:"retransTimeoutEvents,omitempty"`
	UnresponsiveRemotes *uint64 `json:"unresponsiveRemoteEvents,omitempty"`
	ImpairedRemoteConns *uint64 `json:"impairedRemoteConnEvents,omitempty"`
}

// Node is one node's EFA devices, summed.
type Node struct {
	Node    string `json:"node"`
	Devices int    `json:"devices"`
	TxBytes uint64 `json:"txBytes"`
	RxBytes uint64 `json:"rxBytes"`
	Events
}

// Traffic is the readings' differences: per node the sum over its devices. A device without
// both readings, or whose counter went backwards (a driver reload), is left out and named.
func (e *Readings) Traffic() *Traffic {
	t := &Traffic{Nodes: []Node{}, Problems: append([]string{}, e.Unread...)}
	for _, host := range e.NoReader {
		t.Problems = append(t.Problems, fmt.Sprintf("no reader answered worker %s: its node's counters are missing", host))
	}
	for _, node := range topology.SortedKeys(e.nodes) {
		n := Node{Node: node}
		for _, device := range topology.SortedKeys(e.nodes[node]) {
			r := e.nodes[node][device]
			if r[0] == nil || r[1] == nil {
				t.Problems = append(t.Problems, fmt.Sprintf("node %s device %s has no reading %s the run", node, device,
					map[bool]string{true: "before", false: "after"}[r[0] == nil]))
				continue
			}
			d, err := deltas(r[0], r[1])
			if err != nil {
				t.Problems = append(t.Problems, fmt.Sprintf("node %s device %s: %v", node, device, err))
				continue
			}
			n.Devices++
			n.TxBytes += d[topology.EFATxBytes]
			n.RxBytes += d[topology.EFARxBytes]
			n.Events.add(d)
		}
		if n.Devices > 0 {
			t.Nodes = append(t.Nodes, n)
			t.TxBytes += n.TxBytes
			t.RxBytes += n.RxBytes
			t.Events.addEvents(n.Events)
		}
	}
	return t
}

func deltas(before, after map[string]uint64) (map[string]uint64, error) {
	d := map[string]uint64{}
	for _, name := range topology.SortedKeys(after) { // in order: the same counter is named every time
		a := after[name]
		b, ok := before[name]
		if !ok {
			continue
		}
		if a < b {
			return nil, fmt.Errorf("%s went from %d to %d: the counters restarted (a driver reload?) during the run", name, b, a)
		}
		d[name] = a - b
	}
	return d, nil
}

// Counters are the events' fields by the counter each comes from: the one list add, addEvents
// and the verdict's warnings read.
func (ev *Events) Counters() map[string]**uint64 {
	return map[string]**uint64{topology.EFARetransPkts: &ev.RetransPkts, topology.EFARetransTimeouts: &ev.RetransTimeouts,
		topology.EFAUnresponsiveRemotes: &ev.UnresponsiveRemotes, topology.EFAImpairedRemoteConns: &ev.ImpairedRemoteConns}
}

func (ev *Events) add(d map[string]uint64) {
	for name, p := range ev.Counters() {
		if v, ok := d[name]; ok {
			*p = sum(*p, v)
		}
	}
}

func (ev *Events) addEvents(o Events) {
	from := o.Counters()
	for name, p := range ev.Counters() {
		if *from[name] != nil {
			*p = sum(*p, **from[name])
		}
	}
}

func sum(p *uint64, v uint64) *uint64 {
	if p != nil {
		v += *p
	}
	return &v
}

// FloorPerNode: a multi-node run whose nodes' EFA devices sent less than this (1 MiB) each
// crossed nothing over EFA: NCCL's setup alone, or libfabric's, sends more on a device it uses.
const FloorPerNode = 1 << 20

// CrossedNothing reports whether a run over several nodes sent next to nothing over EFA (under
// FloorPerNode a node): its inter-node traffic went another way, whatever NCCL printed.
func (t *Traffic) CrossedNothing() bool {
	return len(t.Nodes) > 1 && t.TxBytes < uint64(len(t.Nodes))*FloorPerNode
}

// EventsCounted reports whether the nodes' driver keeps the network counters (Linux 6.17, EFA
// driver 2.17, Nitro v4 and later).
func (t *Traffic) EventsCounted() bool {
	return t.RetransTimeouts != nil || t.ImpairedRemoteConns != nil || t.UnresponsiveRemotes != nil
}

// Warnings are the network events a healthy fabric does not have, each "N what during the run,
// on node (count), …": retransmit timeouts, impaired connections, unresponsive peers.
func (t *Traffic) Warnings() []string {
	var out []string
	for _, c := range []struct{ counter, what string }{
		{topology.EFARetransTimeouts, "retransmit timeout(s) (SRD timed out and moved packets to another path)"},
		{topology.EFAImpairedRemoteConns, "impaired connection(s) (SRD rate-limited a connection)"},
		{topology.EFAUnresponsiveRemotes, "unresponsive peer(s) (a remote did not answer: a connection failed)"},
	} {
		if n := *t.Counters()[c.counter]; n != nil && *n > 0 {
			out = append(out, fmt.Sprintf("%d %s during the run, on %s", *n, c.what, nodesWith(t.Nodes, c.counter)))
		}
	}
	return out
}

// nodesWith names the nodes whose counter moved.
func nodesWith(nodes []Node, counter string) string {
	var names []string
	for _, n := range nodes {
		if c := *n.Counters()[counter]; c != nil && *c > 0 {
			names = append(names, fmt.Sprintf("%s (%d)", n.Node, *c))
		}
	}
	return strings.Join(names, ", ")
}

// BytesText writes a byte count in decimal units, as network figures are given.
func BytesText(b uint64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.2f TB", float64(b)/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(b)/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(b)/1e6)
	}
	return fmt.Sprintf("%d B", b)
}
