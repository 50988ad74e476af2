package authn

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/utils/lru"
)

// sealedEntries bounds each set of sealedSet.
const sealedEntries = 10000

// sealedSet is what the throttle knows of unguessable credentials (JWTs
// and the hub's sealed session cookie), for addresses over their failure
// budget (outside attack review, row 34).
//
// Such a credential cannot be guessed, so where it worked does not
// matter: once it authenticated anywhere, or the hub minted it (a
// service-account token from TokenRequest, Throttle.Remember), it is known
// good from every address. Everything else waits while its address, or
// the hub, is over budget: evaluating a forged JWT costs a signature
// check and a failed authentication (upstream logs each one), and a flood
// of them from one address cost the victim 45 times its latency while
// every one was evaluated. A session cookie whose seal is the hub's is
// let through without being known (a first login, a refresh): checking
// the seal is an AEAD open, no store read; a forged cookie fails it.
//
// A known credential that then fails (an expired token, an ended session)
// is forgotten, and a session cookie that failed is remembered as bad, so
// that nobody can flood with a credential that once worked. The sets are
// LRUs: unguessable credentials are never remembered per address, and a
// holder of many tokens flushing the good set only makes the tokens of
// people behind an address over budget wait until they work again.
type sealedSet struct {
	// authentic checks a session cookie's seal (Throttle.WithSessionCheck).
	authentic func(*http.Request) bool

	mu   sync.Mutex
	good *lru.Cache
	bad  *lru.Cache // session cookies that failed
}

func newSealedSet() *sealedSet {
	return &sealedSet{good: lru.New(sealedEntries), bad: lru.New(sealedEntries)}
}

func isCookie(cred string) bool { return strings.HasPrefix(cred, "cookie:") }

func (s *sealedSet) succeeded(cred string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := digest(anyAddress, cred)
	s.bad.Remove(k)
	s.good.Add(k, struct{}{})
}

func (s *sealedSet) failed(cred string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := digest(anyAddress, cred)
	s.good.Remove(k)
	if isCookie(cred) {
		s.bad.Add(k, struct{}{})
	}
}

// mayPass reports whether cred, carried by r, may be evaluated while its
// address or the hub is over budget.
func (s *sealedSet) mayPass(r *http.Request, cred string) bool {
	k := digest(anyAddress, cred)
	s.mu.Lock()
	_, good := s.good.Get(k)
	_, bad := s.bad.Get(k)
	s.mu.Unlock()
	switch {
	case good:
		return true
	case bad || !isCookie(cred) || s.authentic == nil:
		return false
	default:
		return s.authentic(r)
	}
}
