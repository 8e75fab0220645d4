package kubeapi

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// webhookCertificate writes a self-signed serving certificate for 127.0.0.1 (made once per
// server) into dir as tls.crt and tls.key, the names controller-runtime's webhook server reads,
// and returns it: the CA bundle the API server verifies the webhooks with. In a cluster a
// cert-controller makes both, for the webhook Service's name.
func (s *Server) webhookCertificate(dir string) (ca []byte, err error) {
	if s.webhookCert[0] == nil {
		// Also valid as Kueue's CA and for its webhook Service: Kueue's certificate rotator
		// keeps a certificate it is given only if it is (kueueCertificateSecret).
		tpl := &x509.Certificate{
			Subject: pkix.Name{CommonName: "gpucluster test webhooks"}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:    []string{kueueCAName, kueueWebhookService + "." + kueueNamespace + ".svc"},
		}
		cert, key, err := selfSignedPEM(tpl)
		if err != nil {
			return nil, err
		}
		s.webhookCert = [2][]byte{cert, key}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), s.webhookCert[1], 0o600); err != nil {
		return nil, err
	}
	return s.webhookCert[0], os.WriteFile(filepath.Join(dir, "tls.crt"), s.webhookCert[0], 0o600)
}

// webhookConfigurations reads a release's webhook configurations (a multi-document manifest
// whose webhooks call a Service) and points every webhook at url (the controller serving on
// loopback) with the CA bundle, each configuration renamed with prefix: two releases both name
// theirs "mutating-webhook-configuration". adjust may add what the release's kustomize patches
// add (selectors) to a webhook, by its name.
func webhookConfigurations(manifest []byte, prefix, url string, ca []byte, adjust func(hook map[string]any)) ([]map[string]any, error) {
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if doc == nil {
			continue
		}
		b, err := yaml.Marshal(doc)
		if err != nil {
			return nil, err
		}
		obj, err := yamlToObject(b)
		if err != nil {
			return nil, err
		}
		if kind := obj["kind"]; kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration" {
			continue
		}
		meta := obj["metadata"].(map[string]any)
		meta["name"] = prefix + "-" + meta["name"].(string)
		hooks, _ := obj["webhooks"].([]any)
		for _, h := range hooks {
			hook := h.(map[string]any)
			cc := hook["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			path, _ := svc["path"].(string)
			if path == "" {
				return nil, fmt.Errorf("webhook %v calls no service path", hook["name"])
			}
			hook["clientConfig"] = map[string]any{"url": strings.TrimSuffix(url, "/") + path, "caBundle": base64.StdEncoding.EncodeToString(ca)}
			if adjust != nil {
				adjust(hook)
			}
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no webhook configuration in the manifest")
	}
	return out, nil
}

// waitServing waits until a controller serves TLS on addr, or its process exits.
func (s *Server) waitServing(p *process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting (%v)\n--- %s log:\n%s", p.name, p.err, p.name, s.logTail(p.name))
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not serve its webhooks on %s after %s (%v)\n--- %s log:\n%s", p.name, addr, timeout, err, p.name, s.logTail(p.name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
