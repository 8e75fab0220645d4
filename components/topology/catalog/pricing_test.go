package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/kubeapi"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPricesMatchKarpentersTable(t *testing.T) {
	mod, err := kubeapi.KarpenterModuleDir() // the module the test API server reads its CRDs from
	if err != nil {
		t.Fatal(err)
	}
	src := readFile(t, filepath.Join(mod, "pkg/providers/pricing/zz_generated.pricing_aws.go"))
	if !strings.Contains(PriceSource, "karpenter-provider-aws "+kubeapi.KarpenterVersion+",") {
		t.Errorf("PriceSource names %q; the prices are compared with karpenter-provider-aws %s", PriceSource, kubeapi.KarpenterVersion)
	}
	if !strings.Contains(src, "generated at "+PriceDate) {
		t.Errorf("the table is not the one generated %s", PriceDate)
	}
	block := src[strings.Index(src, `"`+PriceRegion+`": {`):]
	block = block[:strings.Index(block, "\n\t},")]
	upstream := map[string]float64{}
	for _, m := range regexp.MustCompile(`"([a-z0-9.-]+)": ([0-9.]+),`).FindAllStringSubmatch(block, -1) {
		upstream[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	for typ, price := range onDemandUSEast1 {
		if up, ok := upstream[typ]; !ok || up != price {
			t.Errorf("%s: %.6f here, %.6f (present %v) in Karpenter's table", typ, price, up, ok)
		}
	}
	for _, it := range All() {
		if _, here := onDemandUSEast1[it.Name]; !here && upstream[it.Name] != 0 {
			t.Errorf("%s has a price upstream (%.6f) that the plan does not show", it.Name, upstream[it.Name])
		}
	}
}
