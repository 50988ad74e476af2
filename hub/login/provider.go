package login

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// provider is the IdP as browser login sees it: discovery, the
// authorization URL, the code exchange and refresh (golang.org/x/oauth2),
// and ID token verification for the nonce (coreos/go-oidc).
//
// Why go-oidc + x/oauth2 and not zitadel's rp: these two are what most Go
// relying parties use, they are small, and they keep the hub's RP side
// independent of the library the test IdP is built from, so a shared bug
// cannot make both sides agree on something wrong. Claim mapping is not
// done here: the verified ID token goes through the hub's bearer OIDC
// authenticator (hub/authn), so a session has exactly the identity the
// same token has as a bearer.
type provider struct {
	cfg     *OIDC
	secret  string
	scopes  []string
	redir   string
	client  *http.Client
	mu      sync.Mutex // guards the fields below
	p       *oidc.Provider
	device  bool
	lastTry time.Time
	// fetching is closed when the discovery in flight ends; nil when none
	// is. Waiters select on it with their own context, never holding mu
	// across network I/O.
	fetching chan struct{}
}

func newProvider(cfg *OIDC, secret string, scopes []string, redirectURL string) *provider {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if len(cfg.CAData) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(cfg.CAData)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &provider{cfg: cfg, secret: secret, scopes: scopes, redir: redirectURL, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

var errDiscoveryBackoff = errors.New("IdP discovery failed recently; not retrying yet")

// ctx carries the IdP HTTP client for go-oidc and x/oauth2.
func (p *provider) ctx(ctx context.Context) context.Context {
	return context.WithValue(oidc.ClientContext(ctx, p.client), oauth2.HTTPClient, p.client)
}

// discover returns the discovered provider, fetching discovery on first
// use (the hub starts while the IdP is down) and at most every few
// seconds after a failure. One request fetches; concurrent ones wait for
// it, each bounded by its own context.
func (p *provider) discover(ctx context.Context) (*oidc.Provider, error) {
	p.mu.Lock()
	if p.p != nil {
		d := p.p
		p.mu.Unlock()
		return d, nil
	}
	if wait := p.fetching; wait != nil {
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
		d := p.p
		p.mu.Unlock()
		if d == nil {
			return nil, errDiscoveryBackoff
		}
		return d, nil
	}
	if time.Since(p.lastTry) < 3*time.Second {
		p.mu.Unlock()
		return nil, errDiscoveryBackoff
	}
	p.lastTry = time.Now()
	done := make(chan struct{})
	p.fetching = done
	p.mu.Unlock()

	// Detached from the caller: one client hanging up must not fail
	// discovery for everyone waiting on it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	d, err := oidc.NewProvider(p.ctx(fctx), p.cfg.IssuerURL)
	var device bool
	if err == nil {
		var extra struct {
			Device string `json:"device_authorization_endpoint"`
		}
		device = d.Claims(&extra) == nil && extra.Device != ""
	}
	p.mu.Lock()
	if err == nil {
		p.p, p.device = d, device
	}
	p.fetching = nil
	p.mu.Unlock()
	close(done)
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", p.cfg.IssuerURL, err)
	}
	return d, nil
}

// deviceAuthorization reports whether discovery advertised a device
// authorization endpoint; false while unknown.
func (p *provider) deviceAuthorization(ctx context.Context) bool {
	if _, err := p.discover(ctx); err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.device
}

func (p *provider) oauth2(d *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: p.cfg.ClientID, ClientSecret: p.secret, Endpoint: d.Endpoint(),
		RedirectURL: p.redir, Scopes: p.scopes,
	}
}

// verify checks an ID token's signature, issuer, audience and expiry and,
// when nonce is set, its nonce.
func (p *provider) verify(ctx context.Context, d *oidc.Provider, raw, nonce string) (*oidc.IDToken, error) {
	tok, err := d.Verifier(&oidc.Config{ClientID: p.cfg.ClientID}).Verify(p.ctx(ctx), raw)
	if err != nil {
		return nil, err
	}
	if nonce != "" && tok.Nonce != nonce {
		return nil, errors.New("ID token nonce does not match the login attempt")
	}
	return tok, nil
}

// redactOAuth keeps an IdP error's OAuth code and HTTP status but drops
// the response body, which may echo what the hub sent (a code, a refresh
// token): errors are logged.
func redactOAuth(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err
	}
	status := "no response"
	if re.Response != nil {
		status = re.Response.Status
	}
	if re.ErrorCode != "" {
		return fmt.Errorf("IdP token endpoint: %s: %s", status, re.ErrorCode)
	}
	return fmt.Errorf("IdP token endpoint: %s", status)
}
