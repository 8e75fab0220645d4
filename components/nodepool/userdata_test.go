package nodepool

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
)

// TestUserDataGivesTheDriverItsOptions: a pool with nvidia module options gets a cloud-config part
// beside its NodeConfig that writes them to topology.NVIDIAModuleOptionsFile; a pool without gets its NodeConfig
// alone. The document is read back as MIME multi-part and YAML, as cloud-init and nodeadm do.
func TestUserDataGivesTheDriverItsOptions(t *testing.T) {
	parts := func(spec topology.PoolSpec) map[string]string {
		t.Helper()
		encoded, err := userData(spec, Cluster{})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := base64.StdEncoding.DecodeString(encoded)
		header, body, _ := bytes.Cut(raw, []byte("\n\n"))
		tp := textproto.NewReader(bufio.NewReader(strings.NewReader(string(header) + "\n\n")))
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatal(err)
		}
		_, params, err := mime.ParseMediaType(h.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := r.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(p)
			out[p.Header.Get("Content-Type")] = string(b)
		}
		return out
	}
	plain := parts(derived(t, func(*topology.Profile) {}))
	if _, ok := plain["application/node.eks.aws"]; !ok || len(plain) != 1 {
		t.Errorf("a p5 pool's user data parts: %v", plain)
	}
	spec := derived(t, func(*topology.Profile) {})
	spec.AMI.NVIDIAModuleOptions = []string{topology.GrdmaTopologyOverride}
	got := parts(spec)
	config, ok := got["text/cloud-config"]
	if !ok || !strings.HasPrefix(config, "#cloud-config\n") || got["application/node.eks.aws"] == "" {
		t.Fatalf("user data parts: %v", got)
	}
	var doc struct {
		WriteFiles []struct{ Path, Permissions, Content string } `yaml:"write_files"`
	}
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.WriteFiles) != 1 || doc.WriteFiles[0].Path != topology.NVIDIAModuleOptionsFile || doc.WriteFiles[0].Permissions != "0644" ||
		doc.WriteFiles[0].Content != "options nvidia "+topology.GrdmaTopologyOverride+"\n" {
		t.Errorf("cloud-config %+v", doc)
	}
}
