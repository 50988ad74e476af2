package idp

import (
	"context"
	"crypto/rsa"
	"fmt"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Key is an RS256 signing key.
type Key struct {
	id  string
	key *rsa.PrivateKey
}

func (k *Key) ID() string                                  { return k.id }
func (k *Key) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *Key) Key() any                                    { return k.key }

// publicKey is how a Key appears in the JWKS.
type publicKey struct{ k *Key }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }

// storage is the minimal in-memory op.Storage: keys and user info. The
// embedded interface is nil, so a flow the fixture does not back (login,
// code exchange) panics loudly instead of silently succeeding.
type storage struct {
	op.Storage
	mu   sync.Mutex
	keys []*Key // the last one signs
}

func (s *storage) rotate(t testing.TB) *Key {
	s.mu.Lock()
	n := len(s.keys)
	s.mu.Unlock()
	k := NewKey(t, fmt.Sprintf("key-%d", n))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
	return k
}

func (s *storage) signing() *Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return s.signing(), nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

func (s *storage) Health(context.Context) error { return nil }

func (s *storage) SetUserinfoFromScopes(_ context.Context, u *oidc.UserInfo, subject, _ string, _ []string) error {
	u.Subject = subject
	u.Email = "grace@example.com"
	u.EmailVerified = true
	u.AppendClaims("groups", []string{"admins"})
	return nil
}

// idTokenRequest and client are what op.CreateIDToken needs.
type idTokenRequest struct{ clientID, subject string }

func (r idTokenRequest) GetAMR() []string       { return []string{"pwd"} }
func (r idTokenRequest) GetAudience() []string  { return []string{r.clientID} }
func (r idTokenRequest) GetAuthTime() time.Time { return time.Now() }
func (r idTokenRequest) GetClientID() string    { return r.clientID }
func (r idTokenRequest) GetScopes() []string    { return []string{"openid", "email", "groups"} }
func (r idTokenRequest) GetSubject() string     { return r.subject }

type client struct{ op.Client }

func (client) ClockSkew() time.Duration { return 0 }
func (client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (client) IDTokenUserinfoClaimsAssertion() bool { return true }
