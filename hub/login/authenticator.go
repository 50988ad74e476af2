package login

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"
)

// SessionAuthenticator authenticates the __Host-wharf_session cookie: the fourth
// member of the hub's authenticator union (hub/authn). It only looks at
// requests without an Authorization header.
type SessionAuthenticator struct {
	sessions *sessions
	store    *store
	clock    clock.PassiveClock
}

var _ authenticator.Request = (*SessionAuthenticator)(nil)

// errSession is the one error for every rejected cookie; the apiserver
// logs it and answers a generic 401.
var errSession = errors.New("session cookie rejected")

// AuthenticateRequest accepts a cookie that is authentic, not expired,
// not due for revalidation with the IdP, and whose session still exists
// server-side (logout deletes it on every replica at once).
func (a *SessionAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	s, err := a.session(r)
	if err != nil || s == nil {
		return nil, false, err
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name: s.User, UID: s.UID, Groups: append([]string(nil), s.Groups...),
	}}, true, nil
}

// Authentic reports whether r carries a session cookie sealed by the hub
// and not past its expiry, without reading the session store: a cheap
// check, for the failed-authentication throttle (hub/authn), that the
// cookie was not made up by the caller.
func (a *SessionAuthenticator) Authentic(r *http.Request) bool {
	_, ok, err := a.sessions.fromRequest(r, a.clock.Now())
	return ok && err == nil
}

// session returns the valid session of r, nil if r carries none.
func (a *SessionAuthenticator) session(r *http.Request) (*Session, error) {
	now := a.clock.Now()
	s, ok, err := a.sessions.fromRequest(r, now)
	if !ok {
		return nil, nil
	}
	if err != nil {
		return nil, errSession
	}
	if now.Unix() >= s.Revalidate {
		return nil, fmt.Errorf("%w: identity due for revalidation", errSession)
	}
	if _, _, err := a.store.getSession(r.Context(), s.ID); err != nil {
		if errors.Is(err, errNoSession) {
			return nil, fmt.Errorf("%w: session %s ended", errSession, shortID(s.ID))
		}
		return nil, fmt.Errorf("%w: %w", errSession, err)
	}
	return &s, nil
}

// shortID is how a session id may appear in logs: the id is not a
// credential on its own (the sealed cookie is), but keep logs terse.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// now is a helper for callers without a clock of their own.
func (a *SessionAuthenticator) now() time.Time { return a.clock.Now() }
