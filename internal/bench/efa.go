package bench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// EFAReadings are the EFA counter blocks of a job's log (topology.EFACounterMarker): per node,
// per device, the reading before the measured run and the one after it.
type EFAReadings struct {
	nodes map[string]map[string]*[2]map[string]uint64 // node → device → [before, after]
	// Unread are marker lines that could not be read, with why; NoReader the workers that said no
	// reader answered them (topology.EFACountersNoReader).
	Unread   []string
	NoReader []string
}

// ParseEFACounters reads the counter blocks of a log, whatever prefix a launcher put before
// them (Open MPI's --tag-output, kubectl's timestamps). It returns nil when the log has none.
func ParseEFACounters(r io.Reader) (*EFAReadings, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var e *EFAReadings
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		i := strings.Index(line, topology.EFACounterMarker+" ")
		j := strings.Index(line, topology.EFACountersNoReader)
		if i < 0 && j < 0 {
			continue
		}
		if e == nil {
			e = &EFAReadings{nodes: map[string]map[string]*[2]map[string]uint64{}}
		}
		if i < 0 {
			e.NoReader = appendNew(e.NoReader, strings.TrimSpace(line[j+len(topology.EFACountersNoReader):]))
			continue
		}
		if err := e.add(line[i+len(topology.EFACounterMarker):]); err != nil {
			e.Unread = append(e.Unread, fmt.Sprintf("line %d: %v", n, err))
		}
	}
	return e, sc.Err()
}

func (e *EFAReadings) add(fields string) error {
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
	// Several pods of one node (one GPU per pod) read the same device: the first reading before
	// the run and the last after it span the run.
	if i == 0 && r[0] != nil {
		return nil
	}
	r[i] = values
	return nil
}

// EFATraffic is what the EFA devices counted during a run, per node and in all. The event
// counts are nil when the nodes' driver does not keep them (before Linux 6.17, EFA driver 2.17).
type EFATraffic struct {
	Nodes   []EFANode `json:"nodes"`
	TxBytes uint64    `json:"txBytes"`
	RxBytes uint64    `json:"rxBytes"`
	EFAEvents
	// NeededBytes is the least the timed iterations had to send from the nodes in all, and
	// NeededHow how it was counted; 0 when the run does not say (another test, no header).
	NeededBytes int64  `json:"neededBytes,omitempty"`
	NeededHow   string `json:"neededHow,omitempty"`
	// Problems are readings that could not be used, with why.
	Problems []string `json:"problems,omitempty"`
}

// EFAEvents are the network counters' changes.
type EFAEvents struct {
	RetransPkts         *uint64 `json:"retransPkts,omitempty"`
	RetransTimeouts     *uint64 `json:"retransTimeoutEvents,omitempty"`
	UnresponsiveRemotes *uint64 `json:"unresponsiveRemoteEvents,omitempty"`
	ImpairedRemoteConns *uint64 `json:"impairedRemoteConnEvents,omitempty"`
}

// EFANode is one node's EFA devices, summed.
type EFANode struct {
	Node    string `json:"node"`
	Devices int    `json:"devices"`
	TxBytes uint64 `json:"txBytes"`
	RxBytes uint64 `json:"rxBytes"`
	EFAEvents
}

// Traffic is the readings' differences: per node the sum over its devices. A device without
// both readings, or whose counter went backwards (a driver reload), is left out and named.
func (e *EFAReadings) Traffic() *EFATraffic {
	t := &EFATraffic{Nodes: []EFANode{}, Problems: append([]string{}, e.Unread...)}
	for _, host := range e.NoReader {
		t.Problems = append(t.Problems, fmt.Sprintf("no reader answered worker %s: its node's counters are missing", host))
	}
	for _, node := range topology.SortedKeys(e.nodes) {
		n := EFANode{Node: node}
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
			n.EFAEvents.add(d)
		}
		if n.Devices > 0 {
			t.Nodes = append(t.Nodes, n)
			t.TxBytes += n.TxBytes
			t.RxBytes += n.RxBytes
			t.EFAEvents.addEvents(n.EFAEvents)
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

// counters are the events' fields by the counter each comes from: the one list add, addEvents
// and the verdict's warnings read.
func (ev *EFAEvents) counters() map[string]**uint64 {
	return map[string]**uint64{topology.EFARetransPkts: &ev.RetransPkts, topology.EFARetransTimeouts: &ev.RetransTimeouts,
		topology.EFAUnresponsiveRemotes: &ev.UnresponsiveRemotes, topology.EFAImpairedRemoteConns: &ev.ImpairedRemoteConns}
}

func (ev *EFAEvents) add(d map[string]uint64) {
	for name, p := range ev.counters() {
		if v, ok := d[name]; ok {
			*p = sum(*p, v)
		}
	}
}

func (ev *EFAEvents) addEvents(o EFAEvents) {
	from := o.counters()
	for name, p := range ev.counters() {
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
