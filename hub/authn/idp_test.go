package authn_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// testIdP is a real OpenID Provider (zitadel's op package) on loopback
// TLS. It serves discovery and the JWKS from an in-memory key store; the
// tests mint ID tokens with its signing key, either through op itself
// (CreateIDToken) or directly when a claim must be wrong on purpose.
type testIdP struct {
	URL    string
	CAFile string
	store  *idpStorage
	op     *op.Provider
}

func newTestIdP(t *testing.T) *testIdP {
	t.Helper()
	store := &idpStorage{}
	store.rotate(t)
	var h http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cfg := &op.Config{CryptoKey: [32]byte{1}, CodeMethodS256: true}
	p, err := op.NewOpenIDProvider(srv.URL, cfg, store)
	if err != nil {
		t.Fatalf("op.NewOpenIDProvider: %v", err)
	}
	h = p
	ca := filepath.Join(t.TempDir(), "idp-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testIdP{URL: srv.URL, CAFile: ca, store: store, op: p}
}

// sign signs claims with the IdP's current signing key.
func (i *testIdP) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	return signWith(t, i.store.signing(), claims)
}

func signWith(t *testing.T, k *idpKey, claims map[string]any) string {
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

// claims returns a valid ID token's claims for clientID, adjusted by mod.
func (i *testIdP) claims(clientID string, mod func(map[string]any)) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss":            i.URL,
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

// idpKey is an RSA signing key the storage publishes.
type idpKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *idpKey) ID() string                                  { return k.id }
func (k *idpKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *idpKey) Key() any                                    { return k.key }

type publicKey struct{ *idpKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func newKey(t *testing.T, id string) *idpKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &idpKey{id: id, key: k}
}

// idpStorage is the minimal in-memory op.Storage: keys and user info. The
// embedded interface is nil, so a flow the tests do not drive (login,
// code exchange) panics loudly instead of silently succeeding.
type idpStorage struct {
	op.Storage
	mu   sync.Mutex
	keys []*idpKey // last is the signing key
}

// rotate publishes a new key and signs with it from now on; old keys stay
// published, as an IdP does during rotation.
func (s *idpStorage) rotate(t *testing.T) *idpKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := newKey(t, "key-"+string(rune('a'+len(s.keys))))
	s.keys = append(s.keys, k)
	return k
}

func (s *idpStorage) signing() *idpKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

func (s *idpStorage) SigningKey(context.Context) (op.SigningKey, error) { return s.signing(), nil }

func (s *idpStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *idpStorage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

func (s *idpStorage) Health(context.Context) error { return nil }

func (s *idpStorage) SetUserinfoFromScopes(_ context.Context, u *oidc.UserInfo, subject, _ string, _ []string) error {
	u.Subject = subject
	u.Email = "grace@example.com"
	u.EmailVerified = true
	u.AppendClaims("groups", []string{"admins"})
	return nil
}

// idTokenRequest and idpClient are what op.CreateIDToken needs to mint a
// token the way the provider's token endpoint does.
type idTokenRequest struct{ clientID, subject string }

func (r idTokenRequest) GetAMR() []string       { return []string{"pwd"} }
func (r idTokenRequest) GetAudience() []string  { return []string{r.clientID} }
func (r idTokenRequest) GetAuthTime() time.Time { return time.Now() }
func (r idTokenRequest) GetClientID() string    { return r.clientID }
func (r idTokenRequest) GetScopes() []string    { return []string{"openid", "email", "groups"} }
func (r idTokenRequest) GetSubject() string     { return r.subject }

type idpClient struct{ op.Client }

func (idpClient) ClockSkew() time.Duration { return 0 }
func (idpClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (idpClient) IDTokenUserinfoClaimsAssertion() bool { return true }

// op_CreateIDToken mints an ID token through op.CreateIDToken, the code
// the provider's token endpoint uses.
func op_CreateIDToken(t *testing.T, idp *testIdP) (string, error) {
	t.Helper()
	return op.CreateIDToken(context.Background(), idp.URL, idTokenRequest{clientID: clientID, subject: "u-456"}, time.Hour, "", "", idp.store, idpClient{})
}
