package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The real pulumi-kubernetes provider the real-engine tests run. The module proxy serves its
// provider module only at a commit (2026-01-15), not at a release tag; the program's SDK is
// v4.25.0, released a day later (github.com/pulumi/pulumi-kubernetes, tag v4.25.0), whose plugin
// version the engine asks for. The binary is stamped as what it is: a pre-release of 4.25.0
// named by its commit time (1768448096 = 2026-01-15T03:34:56Z) and hash.
const (
	KubernetesProviderModule = "github.com/pulumi/pulumi-kubernetes/provider/v4"
	KubernetesProviderCommit = "f47bc2d6f199"
	// KubernetesProviderModuleVersion is the module version the build module pins.
	KubernetesProviderModuleVersion = "v4.0.0-20260115033456-" + KubernetesProviderCommit
	KubernetesProviderVersion       = "4.25.0-alpha.1768448096+" + KubernetesProviderCommit
)

// kubernetesProviderCommand is the provider's main package: cmd/pulumi-resource-kubernetes in
// its module, and the directory the build adds it as to the build module.
const kubernetesProviderCommand = "pulumi-resource-kubernetes"

// kubernetesProviderEmbeds is the provider's main package as its upstream build compiles it: its
// main.go, and what it embeds and the module zip leaves out, written as its generate.go writes
// them (`VERSION=… go run generate.go`, which the upstream Makefile runs before go build):
// schema-embed.json, the package schema with its version set, and terraform-mapping-embed.json,
// the mapping re-encoded. generate.go decodes the schema into Pulumi's schema.PackageSpec before
// it encodes it again; this keeps every field as it is (decoding into a map), the same schema.
func kubernetesProviderEmbeds(moduleDir func(string) (string, error)) (map[string][]byte, error) {
	dir, err := moduleDir(KubernetesProviderModule)
	if err != nil {
		return nil, err
	}
	cmd := filepath.Join(dir, "cmd", kubernetesProviderCommand)
	main, err := os.ReadFile(filepath.Join(cmd, "main.go"))
	if err != nil {
		return nil, err
	}
	var schema map[string]json.RawMessage
	if err := readJSON(filepath.Join(cmd, "schema.json"), &schema); err != nil {
		return nil, err
	}
	version, _ := json.Marshal(KubernetesProviderVersion)
	schema["version"] = version
	var mapping any
	if err := readJSON(filepath.Join(cmd, "terraform-mapping.json"), &mapping); err != nil {
		return nil, err
	}
	files := map[string][]byte{filepath.Join(kubernetesProviderCommand, "main.go"): main}
	for name, v := range map[string]any{"schema-embed.json": schema, "terraform-mapping-embed.json": mapping} {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		files[filepath.Join(kubernetesProviderCommand, name)] = data
	}
	return files, nil
}

func readJSON(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
