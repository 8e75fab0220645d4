package topology

import (
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

func TestClassifyTransportEverySpelling(t *testing.T) {
	cases := map[string]string{
		"P2P/CUMEM/read": TransportP2P, "P2P/IPC": TransportP2P, "P2P/direct pointer": TransportP2P, "P2P/CUMEM": TransportP2P,
		"SHM/direct/direct": TransportSHM, "direct shared memory": TransportSHM, "NVLS": TransportNVLS, "NVLS/CUMEM": TransportNVLS,
		"NET/AWS Libfabric/0/GDRDMA": TransportNetLibfabricGDR, "NET/Libfabric/12/GDRDMA": TransportNetLibfabricGDR,
		"NET/AWS Libfabric/3": TransportNetLibfabric, "NET/Libfabric/0": TransportNetLibfabric,
		"NET/Socket/0": TransportNetSocket, "NET/IB/0/GDRDMA": TransportNetIB, "CollNet/0": TransportCollNet, "XYZ": TransportOther,
	}
	for via, want := range cases {
		if got := ClassifyTransport(via); got != want {
			t.Errorf("%q: %s, want %s", via, got, want)
		}
	}
}

func TestWorseTransport(t *testing.T) {
	cases := []struct {
		observed, expected string
		worse              bool
	}{
		{TransportSHM, TransportP2P, true}, {TransportNetSocket, TransportNetLibfabricGDR, true},
		{TransportNetLibfabric, TransportNetLibfabricGDR, true}, {TransportNVLS, TransportP2P, false},
		{TransportP2P, TransportSHM, false}, {TransportNone, TransportP2P, false}, {TransportSHM, TransportNone, false},
		{TransportNetLibfabricGDR, TransportNetSocket, false},
	}
	for _, c := range cases {
		if got := WorseTransport(c.observed, c.expected); got != c.worse {
			t.Errorf("%s vs expected %s: worse %v", c.observed, c.expected, got)
		}
	}
}

// PIX and PXB do not mean P2P where the hypervisor blocks it: the catalog decides.
func TestLinkAllowsP2P(t *testing.T) {
	p5, _ := catalog.Lookup("p5.48xlarge")
	g6e, _ := catalog.Lookup("g6e.48xlarge")
	g5, _ := catalog.Lookup("g5.48xlarge")
	cases := []struct {
		link string
		it   *catalog.InstanceType
		want bool
	}{
		{"NV18", &p5, true}, {"PIX", nil, true}, {"PXB", nil, true}, {"NODE", nil, false}, {"SYS", &p5, false},
		{"PIX", &g6e, false}, {"PXB", &g5, false}, {"PHB", &g6e, false},
	}
	for _, c := range cases {
		name := "unknown"
		if c.it != nil {
			name = c.it.Name
		}
		if got := LinkAllowsP2P(c.link, c.it); got != c.want {
			t.Errorf("%s on %s: %v", c.link, name, got)
		}
	}
}
