package bootstrap

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteSelfSignedServingCert(t *testing.T) {
	cases := []struct {
		name    string
		host    string
		ips     []net.IP
		dns     []string
		wantDNS []string // names the serving certificate must verify for
		wantIPs []string
	}{
		{
			name: "hub defaults", host: "localhost",
			ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, dns: []string{"localhost"},
			wantDNS: []string{"localhost"}, wantIPs: []string{"127.0.0.1", "::1"},
		},
		{
			name: "external name and bind address", host: "localhost",
			ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.7")}, dns: []string{"localhost", "hub.example.com"},
			wantDNS: []string{"localhost", "hub.example.com"}, wantIPs: []string{"127.0.0.1", "10.0.0.7"},
		},
		{
			name: "IP host", host: "192.0.2.1",
			wantIPs: []string{"192.0.2.1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pki")
			certFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
			if err := WriteSelfSignedServingCert(certFile, keyFile, tc.host, tc.ips, tc.dns); err != nil {
				t.Fatal(err)
			}
			chainPEM, err := os.ReadFile(certFile)
			if err != nil {
				t.Fatal(err)
			}
			chain := parseChain(t, chainPEM)
			if len(chain) != 2 {
				t.Fatalf("cert file holds %d certificates, want serving then CA", len(chain))
			}
			leaf, ca := chain[0], chain[1]
			for what, c := range map[string]*x509.Certificate{"serving": leaf, "CA": ca} {
				if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
					t.Errorf("%s key is %s, want ECDSA P-256", what, describeKey(c.PublicKey))
				}
				if c.SignatureAlgorithm != x509.ECDSAWithSHA256 {
					t.Errorf("%s signed with %v, want ECDSA-SHA256", what, c.SignatureAlgorithm)
				}
				if d := c.NotAfter.Sub(c.NotBefore); d != 365*24*time.Hour {
					t.Errorf("%s valid for %v, want a year", what, d)
				}
				if !c.NotBefore.Before(time.Now()) {
					t.Errorf("%s not yet valid: %v", what, c.NotBefore)
				}
			}
			if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 || !bytes.Equal(ca.RawIssuer, ca.RawSubject) {
				t.Errorf("CA: IsCA %v, key usage %v, self-issued %v", ca.IsCA, ca.KeyUsage, bytes.Equal(ca.RawIssuer, ca.RawSubject))
			}
			if leaf.IsCA || leaf.KeyUsage != x509.KeyUsageDigitalSignature ||
				len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
				t.Errorf("serving: IsCA %v, key usage %v, ext key usage %v", leaf.IsCA, leaf.KeyUsage, leaf.ExtKeyUsage)
			}
			if !strings.HasPrefix(leaf.Subject.CommonName, tc.host+"@") || !strings.HasPrefix(ca.Subject.CommonName, tc.host+"-ca@") {
				t.Errorf("names %q, %q; want %s@<time>, %s-ca@<time>", leaf.Subject.CommonName, ca.Subject.CommonName, tc.host, tc.host)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			for _, name := range append(append([]string(nil), tc.wantDNS...), tc.wantIPs...) {
				if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
					t.Errorf("serving certificate does not verify for %s: %v", name, err)
				}
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example.com"}); err == nil {
				t.Error("serving certificate verifies for a name it was not given")
			}

			root, err := RootCA(chainPEM)
			if err != nil || root == nil {
				t.Fatalf("RootCA = %v, %v", root, err)
			}
			if b, _ := pem.Decode(root); b == nil || !bytes.Equal(b.Bytes, ca.Raw) {
				t.Error("RootCA did not return the generated CA")
			}

			keyPEM, err := os.ReadFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "EC PRIVATE KEY" {
				t.Errorf("key file is not an EC PRIVATE KEY block")
			}
			if _, err := tls.X509KeyPair(chainPEM, keyPEM); err != nil {
				t.Errorf("cert and key are not a pair: %v", err)
			}
			for p, want := range map[string]fs.FileMode{keyFile: 0o600, dir: 0o700} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
				}
			}
		})
	}
}

// The in-memory variant makes the same kind of pair, valid for as long as
// it is asked, and refuses a validity that is not positive.
func TestSelfSignedServingCert(t *testing.T) {
	const name = "apiserver-loopback-client"
	validity := (3*365 + 1) * 24 * time.Hour
	chainPEM, keyPEM, err := SelfSignedServingCert(name, nil, nil, validity)
	if err != nil {
		t.Fatal(err)
	}
	chain := parseChain(t, chainPEM)
	if len(chain) != 2 {
		t.Fatalf("chain holds %d certificates, want serving then CA", len(chain))
	}
	for _, c := range chain {
		if pub, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
			t.Errorf("%s: key is %s, want ECDSA P-256", c.Subject.CommonName, describeKey(c.PublicKey))
		}
		if d := c.NotAfter.Sub(c.NotBefore); d != validity {
			t.Errorf("%s: valid for %v, want %v", c.Subject.CommonName, d, validity)
		}
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(chainPEM) // as a loopback client's CA data
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for %s: %v", name, err)
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "EC PRIVATE KEY" {
		t.Errorf("key is not an EC PRIVATE KEY block")
	}
	if _, err := tls.X509KeyPair(chainPEM, keyPEM); err != nil {
		t.Errorf("cert and key are not a pair: %v", err)
	}
	for _, v := range []time.Duration{0, -time.Hour} {
		if _, _, err := SelfSignedServingCert(name, nil, nil, v); err == nil {
			t.Errorf("validity %v accepted", v)
		}
	}
}

// An existing certificate or key is never replaced, and a call that finds
// one leaves the files as they were.
func TestWriteSelfSignedServingCertKeepsExisting(t *testing.T) {
	cases := map[string][]string{
		"both":      {"serving.crt", "serving.key"},
		"cert only": {"serving.crt"},
		"key only":  {"serving.key"},
	}
	for name, existing := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
			for _, f := range existing {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("operator's "+f), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteSelfSignedServingCert(certFile, keyFile, "localhost", nil, nil)
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("err = %v, want fs.ErrExist", err)
			}
			for _, f := range []string{"serving.crt", "serving.key"} {
				got, err := os.ReadFile(filepath.Join(dir, f))
				switch {
				case slices.Contains(existing, f) && string(got) != "operator's "+f:
					t.Errorf("%s replaced: %q (%v)", f, got, err)
				case !slices.Contains(existing, f) && !errors.Is(err, fs.ErrNotExist):
					t.Errorf("%s left behind (%v)", f, err)
				}
			}
		})
	}
}

func parseChain(t *testing.T, chainPEM []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for rest := chainPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			t.Fatalf("unexpected %s block in the cert file", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	return certs
}

func describeKey(pub any) string {
	if k, ok := pub.(*ecdsa.PublicKey); ok {
		return "ECDSA " + k.Curve.Params().Name
	}
	return fmt.Sprintf("%T", pub)
}
