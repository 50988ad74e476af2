package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wharfhub/wharf/cmd/wharf/internal/login"
	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
	"github.com/wharfhub/wharf/test/idp"
)

// loginAt logs in at the real IdP through the loopback flow, a goroutine
// playing the browser.
func loginAt(t *testing.T, p *idp.IdP, o login.OIDC) tokencache.Entry {
	t.Helper()
	pem, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	open := func(u string) error {
		go func() {
			resp, err := b.Get(u)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp, err = idp.SubmitLogin(context.Background(), b, resp.Request.URL.String(), "ada", "lovelace"); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := o.Loopback(ctx, &bytes.Buffer{}, open)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCredentialRefreshesOnce runs several credential plugins at once on
// an expired entry: the IdP rotates refresh tokens, so only the lock
// keeps all but the first from presenting a spent one. All must succeed
// with the same, new ID token.
func TestCredentialRefreshesOnce(t *testing.T) {
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{{ID: "cli", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
		Users:   []idp.User{{Username: "ada", Password: "lovelace", Email: "ada@example.com"}},
	})
	hc, err := login.HTTPClient(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	e := loginAt(t, p, login.OIDC{Issuer: p.URL, ClientID: "cli", HTTP: hc})
	dir := filepath.Join(t.TempDir(), "cache")
	c := tokencache.Cache{Dir: dir}
	key := tokencache.Key(p.URL, "cli")
	e.Expiry = time.Now().Add(-time.Second) // as if it had expired
	if err := c.Store(key, e); err != nil {
		t.Fatal(err)
	}

	const n = 5
	tokens := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := run(t, "credential", "--issuer="+p.URL, "--client-id=cli", "--cache-dir="+dir, "--oidc-ca-file="+p.CAFile)
			if err != nil {
				t.Errorf("credential %d: %v", i, err)
				return
			}
			var ec struct{ Status struct{ Token string } }
			if err := json.Unmarshal([]byte(out), &ec); err != nil {
				t.Errorf("credential %d: %v", i, err)
			}
			tokens[i] = ec.Status.Token
		})
	}
	wg.Wait()
	after, err := c.Load(key)
	if err != nil {
		t.Fatal(err)
	}
	if after.IDToken == e.IDToken || after.RefreshToken == e.RefreshToken || !after.Expiry.After(time.Now()) {
		t.Fatal("the cache was not refreshed")
	}
	for i, tok := range tokens {
		if tok != after.IDToken {
			t.Errorf("credential %d printed a token other than the refreshed one", i)
		}
	}
}
