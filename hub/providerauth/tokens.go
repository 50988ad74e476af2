package providerauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"sync"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
)

// Tokens mints and verifies provider tokens. It is an authenticator.Token.
type Tokens struct {
	mu sync.RWMutex
	// byProvider holds each provider's current token; a new one replaces it.
	byProvider map[string]string
}

var _ authenticator.Token = (*Tokens)(nil)

// NewTokens returns an empty token source.
func NewTokens() *Tokens { return &Tokens{byProvider: map[string]string{}} }

// Mint returns a new token for provider, revoking its previous one.
func (t *Tokens) Mint(provider string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("minting token for provider %s: %w", provider, err)
	}
	tok := "wharf-provider." + base64.RawURLEncoding.EncodeToString(b)
	t.mu.Lock()
	t.byProvider[provider] = tok
	t.mu.Unlock()
	return tok, nil
}

// AuthenticateToken implements authenticator.Token. Providers are few, so
// it compares against each in constant time rather than keying a map by
// the secret.
func (t *Tokens) AuthenticateToken(_ context.Context, token string) (*authenticator.Response, bool, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for p, want := range t.byProvider {
		if subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1 {
			name := providersv1alpha1.ProviderUser(p)
			return &authenticator.Response{User: &user.DefaultInfo{Name: name, UID: name, Groups: []string{providersv1alpha1.ProvidersGroup}}}, true, nil
		}
	}
	return nil, false, nil
}

// Provider returns the provider a user is, if it is a provider identity.
func Provider(u user.Info) (string, bool) {
	if u == nil {
		return "", false
	}
	p, ok := providersv1alpha1.ProviderOfUser(u.GetName())
	if !ok {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == providersv1alpha1.ProvidersGroup {
			return p, true
		}
	}
	return "", false
}
