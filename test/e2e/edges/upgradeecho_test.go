package edges

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// echoAgentToken is the agent's own credential to the echo endpoint (its
// "edge cluster"); the echo records it so a test can tell the agent's
// credential from a caller's hub token.
const echoAgentToken = "echo-agent-own-token"

// upgradeEcho stands in for a kubelet behind an edge's API server: no
// kubelet runs here, so exec, attach and port-forward requests need
// something that answers their upgrades. It is an HTTPS server that
// answers
//   - Upgrade: SPDY/3.1 with 101 and then echoes raw bytes, and
//   - Upgrade: websocket (any of the kubectl subprotocols) with 101 and
//     then echoes every message, binary or text, unchanged,
//
// and records the method, path and headers of every request it got.
type upgradeEcho struct {
	URL        string
	CAPEM      []byte
	Kubeconfig string // for the agent's --kubeconfig, with echoAgentToken

	srv *http.Server

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	Method, Path string
	Header       http.Header
}

// kubectlSubprotocols are what kubectl offers for exec/attach (v5, v4)
// and port-forward (SPDY tunnelled over websocket).
var kubectlSubprotocols = []string{"v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io", "SPDY/3.1+portforward.k8s.io", "portforward.k8s.io"}

func startUpgradeEcho(t *testing.T) *upgradeEcho {
	t.Helper()
	cert, caPEM := selfSignedCert(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &upgradeEcho{URL: "https://" + ln.Addr().String(), CAPEM: caPEM}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	t.Cleanup(func() { _ = e.srv.Close() })
	e.Kubeconfig = filepath.Join(t.TempDir(), "echo.kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: echo
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: agent
  user:
    token: %s
contexts:
- name: echo
  context: {cluster: echo, user: agent}
current-context: echo
`, e.URL, base64.StdEncoding.EncodeToString(caPEM), echoAgentToken)
	if err := os.WriteFile(e.Kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *upgradeEcho) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.seen = append(e.seen, seenRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
	e.mu.Unlock()
	upgrade := strings.ToLower(r.Header.Get("Upgrade"))
	switch {
	case upgrade == "websocket":
		up := websocket.Upgrader{Subprotocols: kubectlSubprotocols, CheckOrigin: func(*http.Request) bool { return true }}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader has answered
		}
		defer c.Close()
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(typ, msg); err != nil {
				return
			}
		}
	case strings.HasPrefix(upgrade, "spdy/"):
		hj, ok := w.(http.Hijacker)
		if !ok {
			http.Error(w, "no hijack", http.StatusInternalServerError)
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", r.Header.Get("Upgrade"))
		if err := buf.Flush(); err != nil {
			return
		}
		// Bytes the client sent right behind its request are in buf.
		_, _ = io.Copy(conn, buf.Reader)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"upgrade echo: only upgrade requests"}`)
	}
}

// requests returns what the echo has received so far.
func (e *upgradeEcho) requests() []seenRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]seenRequest(nil), e.seen...)
}

// lastTo returns the last request whose path ends in suffix.
func (e *upgradeEcho) lastTo(suffix string) (seenRequest, bool) {
	all := e.requests()
	for i := len(all) - 1; i >= 0; i-- {
		if strings.HasSuffix(all[i].Path, suffix) {
			return all[i], true
		}
	}
	return seenRequest{}, false
}

// selfSignedCert makes a CA-less serving certificate for 127.0.0.1 and
// returns it with its PEM (the client pins it as its CA).
func selfSignedCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "upgrade-echo"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}
