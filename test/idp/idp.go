package idp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// IdP is a running OpenID Provider.
type IdP struct {
	// URL is the issuer (https://127.0.0.1:<port>).
	URL string
	// CAFile is a PEM file with the IdP's serving certificate, for
	// --oidc-ca-file.
	CAFile string

	store *storage
}

// Options configure StartWith.
type Options struct {
	Clients []Client
	Users   []User
	// DeviceFlow offers the device authorization grant (RFC 8628) and
	// publishes device_authorization_endpoint in discovery.
	DeviceFlow bool
	// IDTokenLifetime is how long ID and access tokens are valid;
	// default one hour.
	IDTokenLifetime time.Duration
}

// Start serves a provider with no clients or users until the test ends.
func Start(t testing.TB) *IdP { return StartWith(t, Options{}) }

// StartWith serves a provider with clients, users and the interactive
// login form until the test ends.
func StartWith(t testing.TB, o Options) *IdP {
	t.Helper()
	store := newStorage(o)
	store.rotate(t)
	var h http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// The issuer is only known once the listener exists, hence the
	// late-bound handler.
	issuer := srv.URL
	store.loginURL = func(id string) string { return issuer + "/login?authRequestID=" + url.QueryEscape(id) }
	cfg := &op.Config{
		CryptoKey:             [32]byte{1},
		CodeMethodS256:        true,
		GrantTypeRefreshToken: true,
		DeviceAuthorization: op.DeviceAuthorizationConfig{
			Lifetime:     5 * time.Minute,
			PollInterval: time.Second,
			UserFormPath: "/device",
			UserCode:     op.UserCodeBase20,
		},
	}
	var st op.Storage = store
	if o.DeviceFlow {
		st = deviceStorage{store}
	}
	p, err := op.NewOpenIDProvider(issuer, cfg, st)
	if err != nil {
		t.Fatalf("op.NewOpenIDProvider: %v", err)
	}
	lh := &loginHandler{store: store, callback: func(ctx context.Context, id string) string {
		return op.AuthCallbackURL(p)(op.ContextWithIssuer(ctx, issuer), id)
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("/login", lh.login)
	if o.DeviceFlow {
		mux.HandleFunc("/device", lh.device)
	}
	mux.Handle("/", p)
	h = mux
	if !o.DeviceFlow {
		h = withoutDeviceDiscovery(mux)
	}
	ca := filepath.Join(t.TempDir(), "idp-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &IdP{URL: issuer, CAFile: ca, store: store}
}

// ApproveDevice approves the pending device authorization with userCode
// as username, standing in for the user's browser (which can instead GET
// the verification URI and SubmitLogin there).
func (p *IdP) ApproveDevice(_ context.Context, userCode, username string) error {
	return p.store.approveDevice(userCode, username)
}

// Claims returns the claims of a valid ID token for clientID (user ada,
// verified email, groups dev and ops, valid for an hour), changed by mod.
func (p *IdP) Claims(clientID string, mod func(map[string]any)) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss":            p.URL,
		"sub":            "u-123",
		"aud":            clientID,
		"iat":            now.Add(-time.Minute).Unix(),
		"exp":            now.Add(time.Hour).Unix(),
		"email":          "ada@example.com",
		"email_verified": true,
		"name":           "ada",
		"groups":         []string{"dev", "ops"},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

// Sign signs claims with the IdP's current signing key.
func (p *IdP) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	return SignWith(t, p.store.signing(), claims)
}

// SignWith signs claims with k, published or not.
func SignWith(t testing.TB, k *Key, claims map[string]any) string {
	t.Helper()
	s, err := op.SignerFromKey(k)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Mint issues an ID token for subject through op.CreateIDToken, the code
// the provider's token endpoint uses; its claims come from the storage's
// user info (email grace@example.com, verified; groups [admins]).
func (p *IdP) Mint(ctx context.Context, clientID, subject string) (string, error) {
	tok, err := op.CreateIDToken(ctx, p.URL, idTokenRequest{clientID: clientID, subject: subject}, time.Hour, "", "", p.store, client{})
	if err != nil {
		return "", fmt.Errorf("minting ID token: %w", err)
	}
	return tok, nil
}

// SigningKeyID is the key id new tokens are signed with.
func (p *IdP) SigningKeyID() string { return p.store.signing().ID() }

// Rotate publishes a new key and signs with it from now on. Old keys stay
// published, as during a real IdP's rotation.
func (p *IdP) Rotate(t testing.TB) *Key { return p.store.rotate(t) }

// NewKey returns an RSA key with key id id that the IdP does not publish.
func NewKey(t testing.TB, id string) *Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{id: id, key: k}
}
