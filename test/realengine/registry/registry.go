// Package registry is a stand-in of the part of the internet the real pulumi-kubernetes provider
// fetches from during `pulumi up`: the OCI registries that serve the charts (public.ecr.aws,
// registry.k8s.io, ghcr.io) and raw.githubusercontent.com, none of which this machine reaches.
//
// It is an HTTPS proxy. The provider finds it as every Go program does (HTTPS_PROXY, through
// net/http's ProxyFromEnvironment) and trusts its certificate authority through SSL_CERT_FILE,
// so the provider runs unchanged: it asks for the real addresses, and this answers CONNECT to the
// hosts it serves with a TLS server of its own. What it serves is what the upstream releases
// publish, packaged here from their sources in the module cache (Chart). A CONNECT to this
// machine (the cluster's endpoint here) is tunnelled, as a real proxy tunnels to any host it
// reaches. A request for anything else is refused and recorded (Misses): a fetch nobody planned
// fails the test instead of reaching for the network.
package registry

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Server is the proxy and the registries behind it.
type Server struct {
	listener net.Listener
	inner    *http.Server
	conns    *connListener
	caCert   *x509.Certificate
	caKey    *ecdsa.PrivateKey
	caPEM    []byte

	mu        sync.Mutex
	leafCerts map[string]*tls.Certificate
	hosts     map[string]bool
	manifests map[string]manifest // "host/repository:tag"
	blobs     map[string][]byte   // "host/repository@digest"
	files     map[string][]byte   // "host/path"
	misses    []string
	requests  []string
}

// New starts a proxy on a loopback port.
func New() (*Server, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpucluster test registry stand-in CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{listener: l, caCert: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leafCerts: map[string]*tls.Certificate{}, hosts: map[string]bool{}, manifests: map[string]manifest{},
		blobs: map[string][]byte{}, files: map[string][]byte{}, conns: newConnListener(l.Addr())}
	s.inner = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: time.Minute}
	go s.inner.Serve(s.conns)
	go s.accept()
	return s, nil
}

// Close stops the proxy.
func (s *Server) Close() {
	s.listener.Close()
	s.inner.Close()
}

// ProxyURL is the proxy's address, for HTTPS_PROXY.
func (s *Server) ProxyURL() string { return "http://" + s.listener.Addr().String() }

// CA is the PEM certificate of the authority that signs every host's certificate.
func (s *Server) CA() []byte { return s.caPEM }

// Env are the variables that send a Go program's HTTPS requests through the proxy and make it
// trust the proxy's hosts. caFile is where the caller wrote CA(). Loopback addresses (the test
// API server) are never proxied: net/http's ProxyFromEnvironment leaves them out.
func (s *Server) Env(caFile string) map[string]string {
	return map[string]string{"HTTPS_PROXY": s.ProxyURL(), "HTTP_PROXY": s.ProxyURL(), "SSL_CERT_FILE": caFile, "SSL_CERT_DIR": ""}
}

// WriteCA writes CA() to file.
func (s *Server) WriteCA(file string) error { return os.WriteFile(file, s.caPEM, 0o644) }

// AddFile serves data at an https URL.
func (s *Server) AddFile(url string, data []byte) error {
	rest, ok := strings.CutPrefix(url, "https://")
	host, path, _ := strings.Cut(rest, "/")
	if !ok || host == "" {
		return fmt.Errorf("registry stand-in: %q is not an https URL", url)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[host] = true
	s.files[host+"/"+path] = data
	return nil
}

// Misses are the requests it refused: hosts it does not serve, or paths it has nothing at.
func (s *Server) Misses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.misses...)
}

// Requests are the requests it answered, as "METHOD https://host/path".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) miss(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.misses = append(s.misses, fmt.Sprintf(format, args...))
}

func (s *Server) accept() {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		go s.connect(conn)
	}
}

// connect reads a proxy request: CONNECT to a served host becomes a TLS connection to this
// server's registries; anything else is refused.
func (s *Server) connect(conn net.Conn) {
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		conn.Close()
		return
	}
	host, _, err := net.SplitHostPort(req.Host)
	if err != nil {
		host = req.Host
	}
	if req.Method == http.MethodConnect && isLoopback(host) {
		s.tunnel(conn, br, req.Host)
		return
	}
	s.mu.Lock()
	served := s.hosts[host]
	s.mu.Unlock()
	if req.Method != http.MethodConnect || !served {
		s.miss("%s %s (the stand-in serves no such host; nothing here reaches the internet)", req.Method, req.Host)
		fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		conn.Close()
		return
	}
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	tlsConn := tls.Server(&bufferedConn{Conn: conn, r: br}, &tls.Config{GetCertificate: s.certificate, NextProtos: []string{"http/1.1"}})
	s.conns.push(tlsConn)
}

// isLoopback: the host is this machine (the harness's API server, the cluster's endpoint here).
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// tunnel joins a CONNECT to a loopback address, as a proxy does for any reachable host: clients
// that send every request to the proxy, whatever NO_PROXY says (pulumi-eks's cluster readiness
// probe, cluster.js createHttpAgent), reach the cluster's endpoint through it as through a
// corporate proxy.
func (s *Server) tunnel(conn net.Conn, br *bufio.Reader, addr string) {
	defer conn.Close()
	upstream, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	defer upstream.Close()
	s.mu.Lock()
	s.requests = append(s.requests, "CONNECT "+addr+" (tunnelled)")
	s.mu.Unlock()
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(upstream, br); done <- struct{}{} }()
	go func() { io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
}

// certificate is a leaf certificate for the host the client names (SNI), signed by the CA.
func (s *Server) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	host := hello.ServerName
	if !s.hosts[host] {
		return nil, fmt.Errorf("registry stand-in: no certificate for %q", host)
	}
	if c, ok := s.leafCerts[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(len(s.leafCerts) + 2)), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.caCert, &key.PublicKey, s.caKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	s.leafCerts[host] = c
	return c, nil
}

// serve answers a request that came through a CONNECT: a registry's API or a file.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.HasPrefix(r.URL.Path, "/v2/") {
		s.serveRegistry(w, r, host)
		return
	}
	s.mu.Lock()
	data, ok := s.files[host+r.URL.Path]
	if ok {
		s.requests = append(s.requests, r.Method+" https://"+host+r.URL.Path)
	}
	s.mu.Unlock()
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		s.miss("%s https://%s%s (no such file)", r.Method, host, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(data)
}

// bufferedConn is a connection whose first bytes were read into a bufio.Reader already.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connListener hands the TLS connections of CONNECT tunnels to one http.Server.
type connListener struct {
	addr   net.Addr
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, ch: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.closed:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, errors.New("registry stand-in: closed")
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }
