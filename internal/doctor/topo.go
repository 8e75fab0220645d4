package doctor

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// Topo is an `nvidia-smi topo -m` matrix: the link between every GPU pair and each GPU's CPU and
// NUMA affinity. Link legend (nvidia-smi): X self; NV# a bonded set of # NVLinks; PIX at most one
// PCIe bridge; PXB several PCIe bridges; PHB through a PCIe host bridge; NODE between host
// bridges of one NUMA node; SYS across NUMA nodes.
type Topo struct {
	GPUs     []string          `json:"gpus"`
	Links    map[string]string `json:"links"` // "GPU0-GPU1" → NV12, PIX, NODE…
	CPU      map[string]string `json:"cpuAffinity"`
	NUMA     map[string]string `json:"numaAffinity"`
	P2PPairs int               `json:"p2pPairs"`
	Pairs    int               `json:"pairs"`
}

// judgeP2P counts the pairs that can use P2P: by the link labels alone (it nil), or on an
// instance type the catalog knows (topology.LinkAllowsP2P).
func (t *Topo) judgeP2P(it *catalog.InstanceType) {
	t.Pairs, t.P2PPairs = 0, 0
	for _, l := range t.Links {
		t.Pairs++
		if topology.LinkAllowsP2P(l, it) {
			t.P2PPairs++
		}
	}
}

// NVLink says whether the GPUs are joined by NVLink (every pair NV#: NVSwitch systems).
func (t *Topo) NVLink() bool {
	if t.Pairs == 0 {
		return false
	}
	for _, l := range t.Links {
		if !strings.HasPrefix(l, "NV") {
			return false
		}
	}
	return true
}

// ParseTopo reads the matrix; it tolerates NIC rows and columns and the legend below.
func ParseTopo(r io.Reader) (*Topo, error) {
	t := &Topo{Links: map[string]string{}, CPU: map[string]string{}, NUMA: map[string]string{}}
	sc := bufio.NewScanner(r)
	var header []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if header == nil {
			if fields[0] == "GPU0" {
				header = fields
			}
			continue
		}
		if !gpuColumn.MatchString(fields[0]) || len(fields) < 2 {
			if fields[0] == "Legend:" {
				break
			}
			continue
		}
		gpu := fields[0]
		t.GPUs = append(t.GPUs, gpu)
		cols := fields[1:]
		for i, col := range header {
			if i >= len(cols) {
				break
			}
			if !gpuColumn.MatchString(col) || col == gpu {
				continue
			}
			a, b := gpu, col
			if a > b {
				a, b = b, a
			}
			t.Links[a+"-"+b] = cols[i]
		}
		// After the link columns: CPU affinity, NUMA affinity, GPU NUMA ID (when present).
		if n := linkColumns(header); len(cols) > n {
			rest := cols[n:]
			if len(rest) > 0 {
				t.CPU[gpu] = rest[0]
			}
			if len(rest) > 1 {
				t.NUMA[gpu] = rest[1]
			}
		}
	}
	if len(t.GPUs) == 0 {
		return nil, ErrNotNCCL{"no GPU rows: pass the output of `nvidia-smi topo -m`"}
	}
	t.judgeP2P(nil)
	return t, nil
}

var (
	gpuColumn  = regexp.MustCompile(`^GPU[0-9]+$`)
	linkColumn = regexp.MustCompile(`^(GPU|NIC)[0-9]+$`)
)

// linkColumns counts the matrix's device columns (GPUs and NICs) before the affinity columns.
func linkColumns(header []string) int {
	n := 0
	for _, h := range header {
		if linkColumn.MatchString(h) {
			n++
		}
	}
	return n
}

// Summary is a one-line description of the matrix.
func (t *Topo) Summary() string {
	kinds := map[string]int{}
	for _, l := range t.Links {
		kind := l
		if strings.HasPrefix(l, "NV") {
			kind = "NV#"
		}
		kinds[kind]++
	}
	var parts []string
	for _, k := range topology.SortedKeys(kinds) {
		parts = append(parts, fmt.Sprintf("%d × %s", kinds[k], k))
	}
	return fmt.Sprintf("%d GPUs, %d pairs (%s), %d can use P2P", len(t.GPUs), t.Pairs, strings.Join(parts, ", "), t.P2PPairs)
}
