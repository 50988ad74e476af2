package login

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// SessionCookie is the browser session cookie. The __Host- prefix makes
// browsers accept it only with Secure, Path=/ and no Domain, that is only
// from the hub's own origin: a sibling subdomain cannot plant a session of
// its choosing (login CSRF), as it could with a plain name.
const SessionCookie = "__Host-wharf_session"

// legacyCookies are the names the hub used before the __Host- prefix.
// They are never read (anyone on a sibling domain can set them), but a
// browser may still send a sealed session under them, so they count as hub
// credentials when stripping cookies for providers.
var legacyCookies = [...]string{"wharf_session", "wharf_login"}

// IsHubCookie reports whether name is a cookie the hub itself sets, or once
// set. Those are credentials for the hub, so the backend proxy strips them
// before forwarding to a provider (see hub/proxy).
func IsHubCookie(name string) bool {
	if name == SessionCookie || name == LoginCookie {
		return true
	}
	for _, l := range legacyCookies {
		if name == l {
			return true
		}
	}
	return false
}

// Session is the sealed content of the session cookie. It holds no token
// from the IdP: the refresh token, if any, stays in etcd under ID.
type Session struct {
	ID     string   `json:"sid"`
	User   string   `json:"user"`
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// CSRF is the token cookie-authenticated state-changing requests must
	// echo in the X-Wharf-CSRF header.
	CSRF string `json:"csrf"`
	// Expiry is when the session ends for good (--session-max-age).
	Expiry int64 `json:"exp"`
	// Revalidate is when the identity must be checked with the IdP again:
	// the ID token's expiry. Past it the cookie authenticates nothing
	// until a refresh (WithRefresh) renews it.
	Revalidate int64 `json:"reval"`
}

// sessions seals and opens session cookies with a key derived from the
// hub-wide "session-key".
type sessions struct{ s sealer }

func newSessions(secret []byte) (*sessions, error) {
	s, err := newSealer(secret, "session cookie")
	if err != nil {
		return nil, err
	}
	return &sessions{s: s}, nil
}

// maxCookieValue keeps the whole Set-Cookie under the 4096 bytes every
// browser stores; a larger cookie would be dropped silently.
const maxCookieValue = 3800

func (x *sessions) seal(s Session) (string, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encoding session: %w", err)
	}
	v, err := x.s.seal(body, []byte(SessionCookie))
	if err == nil && len(v) > maxCookieValue {
		return "", fmt.Errorf("session of %s with %d groups does not fit in a cookie (%d bytes)", s.User, len(s.Groups), len(v))
	}
	return v, err
}

// open returns the session in value if it is authentic and not past its
// Expiry. Revalidate is the caller's concern.
func (x *sessions) open(value string, now time.Time) (Session, error) {
	body, err := x.s.open(value, []byte(SessionCookie))
	if err != nil {
		return Session{}, err
	}
	var s Session
	if err := json.Unmarshal(body, &s); err != nil || s.ID == "" || s.User == "" || s.CSRF == "" || now.Unix() >= s.Expiry {
		return Session{}, errInvalid
	}
	return s, nil
}

// fromRequest opens the session cookie of r, if r is a cookie request at
// all: a request with an Authorization header is a bearer request and its
// cookies are ignored, so a bad bearer token never falls back to the
// browser session (nor escapes the CSRF check).
func (x *sessions) fromRequest(r *http.Request, now time.Time) (Session, bool, error) {
	if r.Header.Get("Authorization") != "" {
		return Session{}, false, nil
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return Session{}, false, nil
	}
	s, err := x.open(c.Value, now)
	return s, true, err
}

// sessionCookie is the Set-Cookie for s: HttpOnly (no script reads it),
// Secure, SameSite=Lax (sent on top-level navigation, not on cross-site
// subrequests or form posts), for the whole hub.
func sessionCookie(value string, expiry time.Time, now time.Time) *http.Cookie {
	return &http.Cookie{
		Name: SessionCookie, Value: value, Path: "/", MaxAge: int(expiry.Sub(now).Seconds()),
		Expires: expiry, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	}
}

// clearCookie deletes a cookie set with the same name and path.
func clearCookie(name, path string) *http.Cookie {
	return &http.Cookie{Name: name, Value: "", Path: path, MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
}
