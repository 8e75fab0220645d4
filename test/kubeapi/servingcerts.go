package kubeapi

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PodGateway is where the pods the kubelet stand-in runs reach the API server: the host end of
// every pod's veth pair and the pods' default route (build/kube podsandbox.go takes it from
// --api-server-host), their KUBERNETES_SERVICE_HOST. Calico gives pods 169.254.1.1 as their
// gateway the same way.
const PodGateway = "169.254.1.1"

// serverCerts are the files of the API server's certificates, made for one server: its serving
// certificate, valid for every address a client reaches it at (loopback for the tests, the pods'
// gateway for the operators, the kubernetes Service's names and address as in a cluster) and its
// own CA, which every pod trusts through kube-root-ca.crt; and the front proxy's CA and client
// certificate, with which the API server authenticates to an aggregated API server (Kueue's
// visibility API) as kube-apiserver on EKS does.
type serverCerts struct {
	servingCert, servingKey, frontProxyCA, proxyClientCert, proxyClientKey string
}

func writeServerCerts(dir string) (serverCerts, error) {
	c := serverCerts{
		servingCert: filepath.Join(dir, "serving.crt"), servingKey: filepath.Join(dir, "serving.key"),
		frontProxyCA:    filepath.Join(dir, "front-proxy-ca.crt"),
		proxyClientCert: filepath.Join(dir, "front-proxy-client.crt"), proxyClientKey: filepath.Join(dir, "front-proxy-client.key"),
	}
	serving := &x509.Certificate{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(PodGateway), net.ParseIP(kubernetesServiceIP)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	if err := selfSigned(serving, c.servingCert, c.servingKey); err != nil {
		return c, err
	}
	ca := &x509.Certificate{Subject: pkix.Name{CommonName: "front-proxy-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	caDER, caKey, err := issue(ca, nil, nil)
	if err != nil {
		return c, err
	}
	if err := writePEM(c.frontProxyCA, "CERTIFICATE", caDER); err != nil {
		return c, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	client := &x509.Certificate{Subject: pkix.Name{CommonName: frontProxyClient}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	clientDER, clientKey, err := issue(client, caCert, caKey)
	if err != nil {
		return c, err
	}
	if err := writePEM(c.proxyClientCert, "CERTIFICATE", clientDER); err != nil {
		return c, err
	}
	return c, writePEM(c.proxyClientKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(clientKey))
}

// kubernetesServiceIP is the kubernetes Service's address: the first of --service-cluster-ip-range.
const kubernetesServiceIP = "10.96.0.1"

// frontProxyClient is the front proxy client certificate's name, the one name
// --requestheader-allowed-names allows.
const frontProxyClient = "front-proxy-client"

func selfSigned(tpl *x509.Certificate, certFile, keyFile string) error {
	cert, key, err := selfSignedPEM(tpl)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, key, 0o600)
}

// selfSignedPEM makes a 2048-bit RSA key and a certificate of tpl signed by it, valid from an
// hour ago for a year, both PEM-encoded; the key in PKCS #1, the one form Kueue's certificate
// rotator parses a CA key in.
func selfSignedPEM(tpl *x509.Certificate) (cert, key []byte, err error) {
	der, k, err := issue(tpl, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k)), nil
}

// issue makes a 2048-bit RSA key and a certificate of tpl for it, signed by parent's key signer,
// or by the new key itself when parent is nil.
func issue(tpl, parent *x509.Certificate, signer *rsa.PrivateKey) (der []byte, key *rsa.PrivateKey, err error) {
	key, err = rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, signer = tpl, key
	}
	der, err = create(tpl, parent, &key.PublicKey, signer)
	return der, key, err
}

func create(tpl, parent *x509.Certificate, pub *rsa.PublicKey, signer *rsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tpl.SerialNumber = serial
	tpl.NotBefore, tpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour)
	return x509.CreateCertificate(rand.Reader, tpl, parent, pub, signer)
}

func writePEM(file, typ string, der []byte) error {
	return os.WriteFile(file, pemBlock(typ, der), 0o600)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
