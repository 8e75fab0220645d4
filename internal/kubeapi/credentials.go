package kubeapi

import (
	"fmt"
	"os"
	"path/filepath"
)

// Token is the server's admin bearer token (group system:masters), for clients the harness
// starts outside this package, such as the real-engine tests' kubernetes provider double.
func (s *Server) Token() string { return s.token }

// CertificateAuthority is the PEM bundle the server's self-signed serving certificate verifies
// against (kube-apiserver writes its certificate and the CA that signed it to --cert-dir), the
// certificate-authority-data a kubeconfig for this server carries.
func (s *Server) CertificateAuthority() ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "certs", "apiserver.crt"))
	if err != nil {
		return nil, fmt.Errorf("the test API server's certificate: %w", err)
	}
	return b, nil
}

// AdminKubeconfig is the path of a kubeconfig with the admin token, for kubectl in tests.
func (s *Server) AdminKubeconfig() (string, error) { return s.kubeconfig() }
