package kubeapi

import (
	"encoding/json"
	"fmt"
	"os"
)

// Token is the server's admin bearer token (group system:masters), for clients the harness
// starts outside this package, such as the real-engine tests' kubernetes provider.
func (s *Server) Token() string { return s.token }

// CertificateAuthority is the PEM bundle the server's serving certificate verifies against (it
// is its own CA: servingcerts.go), the certificate-authority-data a kubeconfig for this server
// carries.
func (s *Server) CertificateAuthority() ([]byte, error) {
	b, err := os.ReadFile(s.servingCA)
	if err != nil {
		return nil, fmt.Errorf("the test API server's certificate: %w", err)
	}
	return b, nil
}

// AdminKubeconfig is the path of a kubeconfig with the admin token, for kubectl in tests.
func (s *Server) AdminKubeconfig() (string, error) { return s.kubeconfig() }

// ServiceAccountToken is a token of a service account from the TokenRequest API, as the kubelet
// mounts into its pods: a client holding it has exactly the account's RBAC grants.
func (s *Server) ServiceAccountToken(namespace, name string) (string, error) {
	return s.tokenRequest(namespace, name, `{}`)
}

// PodServiceAccountToken is the token the kubelet mounts into a pod: bound to the pod, so the
// API server writes the pod's node into it (authentication.kubernetes.io/node-name in the
// user's extra, since Kubernetes 1.30). The pod must exist, bound to a node that exists.
func (s *Server) PodServiceAccountToken(namespace, serviceAccount, pod string) (string, error) {
	obj, err := s.Get(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"namespace": namespace, "name": pod}})
	if err != nil {
		return "", err
	}
	uid, _ := obj["metadata"].(map[string]any)["uid"].(string)
	return s.tokenRequest(namespace, serviceAccount, fmt.Sprintf(`{"boundObjectRef":{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q}}`, pod, uid))
}

func (s *Server) tokenRequest(namespace, name, spec string) (string, error) {
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":` + spec + `}`)
	code, resp, err := s.do("POST", "/api/v1/namespaces/"+namespace+"/serviceaccounts/"+name+"/token", body)
	if err != nil {
		return "", err
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if code != 201 && code != 200 || json.Unmarshal(resp, &tr) != nil || tr.Status.Token == "" {
		return "", fmt.Errorf("token for %s/%s: HTTP %d: %s", namespace, name, code, resp)
	}
	return tr.Status.Token, nil
}
