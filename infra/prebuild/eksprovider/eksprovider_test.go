// Package eksprovider installs pulumi-eks's component provider from npm early in go test ./...;
// see infra/prebuild.
package eksprovider

import (
	"path/filepath"
	"testing"

	"github.com/gpucluster/gpucluster/infra/prebuild/serves"
	"github.com/gpucluster/gpucluster/internal/realengine/tools"
)

// TestEKSProviderInstalls: npm installs the locked packages and the provider starts under the
// machine's Node.js, printing its port.
func TestEKSProviderInstalls(t *testing.T) {
	dir, err := tools.EKSProvider()
	if err != nil {
		t.Fatal(err)
	}
	serves.Port(t, nil, "node", filepath.Join(dir, "node_modules", "@pulumi", "eks", "cmd", "provider", "index.js"))
}
