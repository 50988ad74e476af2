package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	authv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/utils/clock"

	"golang.org/x/sync/singleflight"
)

// Default TTLs of the TokenReview cache: short, so that a revoked token or a
// removed group stops working within seconds, yet long enough that k9s'
// bursts of requests cost one review.
const (
	DefaultSuccessTTL = 10 * time.Second
	DefaultFailureTTL = 2 * time.Second
	// maxCacheEntries bounds memory against a client sending many distinct
	// garbage tokens; when full, expired entries are swept and, failing
	// that, the cache is emptied (correct, only slower).
	maxCacheEntries = 8192
)

// tokenReviewer authenticates bearer tokens with TokenReviews on the
// downstream, caching answers per SHA-256 of the token. It implements
// authenticator.Token so that k8s.io/apiserver's bearer and websocket
// request authenticators can use it. k8s.io/apiserver's own token cache is
// not used because its clock cannot be injected.
type tokenReviewer struct {
	client     authv1client.TokenReviewInterface
	clock      clock.PassiveClock
	successTTL time.Duration
	failureTTL time.Duration
	group      singleflight.Group

	mu      sync.Mutex
	entries map[[sha256.Size]byte]tokenEntry
}

type tokenEntry struct {
	resp    *authenticator.Response // nil: the token was rejected
	expires time.Time
}

// errReview marks a TokenReview that could not be made (transport, RBAC of
// the provider): not the caller's fault, answered 503 and never cached.
type errReview struct{ err error }

func (e errReview) Error() string { return "token review: " + e.err.Error() }
func (e errReview) Unwrap() error { return e.err }

func newTokenReviewer(c authv1client.TokenReviewInterface, clk clock.PassiveClock, successTTL, failureTTL time.Duration) *tokenReviewer {
	if successTTL <= 0 {
		successTTL = DefaultSuccessTTL
	}
	if failureTTL <= 0 {
		failureTTL = DefaultFailureTTL
	}
	return &tokenReviewer{client: c, clock: clk, successTTL: successTTL, failureTTL: failureTTL,
		entries: map[[sha256.Size]byte]tokenEntry{}}
}

// AuthenticateToken answers from the cache, else makes one TokenReview
// (concurrent requests with the same token share it).
func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if e, ok := t.lookup(key); ok {
		return e.resp, e.resp != nil, nil
	}
	v, err, _ := t.group.Do(string(key[:]), func() (any, error) {
		if e, ok := t.lookup(key); ok {
			return e, nil
		}
		resp, err := t.review(ctx, token)
		if err != nil {
			return nil, err
		}
		ttl := t.failureTTL
		if resp != nil {
			ttl = t.successTTL
		}
		e := tokenEntry{resp: resp, expires: t.clock.Now().Add(ttl)}
		t.store(key, e)
		return e, nil
	})
	if err != nil {
		return nil, false, err
	}
	e := v.(tokenEntry)
	return e.resp, e.resp != nil, nil
}

func (t *tokenReviewer) review(ctx context.Context, token string) (*authenticator.Response, error) {
	tr, err := t.client.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, errReview{fmt.Errorf("create: %w", err)}
	}
	if !tr.Status.Authenticated || tr.Status.User.Username == "" {
		return nil, nil
	}
	u := tr.Status.User
	info := &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string][]string{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return &authenticator.Response{User: info, Audiences: tr.Status.Audiences}, nil
}

func (t *tokenReviewer) lookup(key [sha256.Size]byte) (tokenEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[key]
	if !ok {
		return tokenEntry{}, false
	}
	if !t.clock.Now().Before(e.expires) {
		delete(t.entries, key)
		return tokenEntry{}, false
	}
	return e, true
}

func (t *tokenReviewer) store(key [sha256.Size]byte, e tokenEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.entries) >= maxCacheEntries {
		now := t.clock.Now()
		for k, old := range t.entries {
			if !now.Before(old.expires) {
				delete(t.entries, k)
			}
		}
		if len(t.entries) >= maxCacheEntries {
			clear(t.entries)
		}
	}
	t.entries[key] = e
}
