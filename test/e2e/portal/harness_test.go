package portal

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/idp"
	"github.com/wharfhub/wharf/test/testutil"
)

// person signs in through the IdP's login form.
var person = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev"}}

// portalEnv is a hub with OIDC through the test IdP, token login, and the
// providers the scenarios use.
type portalEnv struct {
	hub *testutil.Hub
	idp *idp.IdP
}

// startPortal starts the IdP, then the hub with the hub's confidential
// client registered for its callback, and extra providers (name=binary).
func startPortal(t *testing.T, providers ...string) *portalEnv {
	t.Helper()
	port := testutil.FreePort(t)
	hubURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{{ID: "wharf", Secret: "hub-client-secret", RedirectURIs: []string{hubURL + "/auth/callback"}}},
		Users:   []idp.User{person},
	})
	dir := t.TempDir()
	secret := filepath.Join(dir, "client-secret")
	if err := os.WriteFile(secret, []byte("hub-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile,
		"--oidc-client-secret-file=" + secret, "--oidc-groups-claim=groups",
		"--provider", "hello=" + testutil.Binary(t, "wharf-provider-hello"),
		"--provider", "portalprobe=" + testutil.Build(t, "./test/e2e/portalprobe", "wharf-provider-portalprobe"),
		"--provider", "portalnodefine=" + testutil.Build(t, "./test/e2e/portalprobe", "wharf-provider-portalnodefine"),
	}
	for _, pr := range providers {
		args = append(args, "--provider", pr)
	}
	h := testutil.StartHub(t, testutil.HubOptions{Port: port, Args: args})
	return &portalEnv{hub: h, idp: p}
}

// spkiHash is base64(SHA-256(SubjectPublicKeyInfo)) of the certificate
// rawURL's server presents, the form chromium's
// --ignore-certificate-errors-spki-list takes. It is read over a TLS
// connection verified with ca, so the pin is the certificate the test
// already trusts and nothing else.
func spkiHash(t *testing.T, rawURL, caFile string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := certPool(caFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
	if err != nil {
		t.Fatalf("TLS to %s: %v", u.Host, err)
	}
	defer c.Close()
	leaf := c.ConnectionState().PeerCertificates[0]
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// artifactDir is where screenshots go: $WHARF_TEST_ARTIFACTS/<test>, else
// t.ArtifactDir() (kept by go test -artifacts).
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("WHARF_TEST_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// eventually is testutil.Eventually under the name this package's tests
// call.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, cond)
}
