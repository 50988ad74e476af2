package idp

import (
	"context"
	"crypto/rsa"
	"fmt"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
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

// storage is the in-memory op.Storage: keys, clients, users, auth
// requests and codes, tokens and device authorizations.
type storage struct {
	idTokenLife time.Duration
	deviceFlow  bool
	loginURL    func(authRequestID string) string

	mu            sync.Mutex
	keys          []*Key // the last one signs
	clients       []Client
	users         []User
	authRequests  map[string]*authRequest
	codes         map[string]string // code -> auth request id
	accessTokens  map[string]accessToken
	refreshTokens map[string]*refreshToken
	devices       map[string]*deviceAuth // device code ->
}

var _ op.Storage = (*storage)(nil)

func newStorage(o Options) *storage {
	s := &storage{
		idTokenLife:   o.IDTokenLifetime,
		deviceFlow:    o.DeviceFlow,
		clients:       o.Clients,
		authRequests:  map[string]*authRequest{},
		codes:         map[string]string{},
		accessTokens:  map[string]accessToken{},
		refreshTokens: map[string]*refreshToken{},
		devices:       map[string]*deviceAuth{},
	}
	if s.idTokenLife == 0 {
		s.idTokenLife = time.Hour
	}
	for _, u := range o.Users {
		if u.Subject == "" {
			u.Subject = "sub-" + u.Username
		}
		s.users = append(s.users, u)
	}
	return s
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
