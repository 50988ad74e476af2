package login

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// LoginCookie is the short-lived pre-login cookie that binds a login
// attempt to the browser that started it. Like SessionCookie it carries
// the __Host- prefix, so a sibling subdomain cannot plant an attempt of
// its own; the prefix requires Path=/.
const LoginCookie = "__Host-wharf_login"

// stateTTL bounds how long a user may take at the IdP.
const stateTTL = 10 * time.Minute

// statePayload is what the signed state parameter carries. It names the
// attempt only: the nonce stays in the sealed pre-login cookie and the
// PKCE verifier in the hub; neither appears in a URL.
type statePayload struct {
	ID     string `json:"id"`
	Expiry int64  `json:"exp"`
}

// attempt is a login in progress, sealed into the pre-login cookie
// except for the PKCE verifier, which never leaves the hub: any replica
// recomputes it from the attempt's id (states.verifier).
type attempt struct {
	StateID  string `json:"sid"`
	Verifier string `json:"-"`
	Nonce    string `json:"nonce"`
	Then     string `json:"then"`
	Expiry   int64  `json:"exp"`
}

// states signs state parameters and seals pre-login cookies, both with
// keys derived from the hub-wide "login-state-key".
type states struct {
	mac    []byte
	pkce   []byte
	cookie sealer
}

func newStates(secret []byte) (*states, error) {
	c, err := newSealer(secret, "pre-login cookie")
	if err != nil {
		return nil, err
	}
	return &states{mac: derive(secret, "state signature"), pkce: derive(secret, "pkce verifier"), cookie: c}, nil
}

// verifier is the PKCE code verifier of attempt id: an HMAC of the random
// id under a hub-wide key, 43 base64url characters (RFC 7636's minimum
// length, 256 bits). Deriving it instead of storing it keeps it out of
// the browser and out of etcd: an unauthenticated /auth/login writes
// nothing, and whichever replica gets the callback recomputes it.
func (s *states) verifier(id string) string {
	m := hmac.New(sha256.New, s.pkce)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign returns the state parameter: base64url(payload) "." base64url(mac).
func (s *states) sign(p statePayload) string {
	body, _ := json.Marshal(p) // two plain fields always marshal
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + base64.RawURLEncoding.EncodeToString(s.sum(enc))
}

func (s *states) sum(enc string) []byte {
	m := hmac.New(sha256.New, s.mac)
	m.Write([]byte(enc))
	return m.Sum(nil)
}

// verify checks the signature and expiry of a state parameter.
func (s *states) verify(state string, now time.Time) (statePayload, error) {
	enc, sig, ok := strings.Cut(state, ".")
	if !ok {
		return statePayload{}, errInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.sum(enc)) {
		return statePayload{}, errInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return statePayload{}, errInvalid
	}
	var p statePayload
	if err := json.Unmarshal(body, &p); err != nil || p.ID == "" || now.Unix() >= p.Expiry {
		return statePayload{}, errInvalid
	}
	return p, nil
}

// sealAttempt is the pre-login cookie's value.
func (s *states) sealAttempt(a attempt) (string, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encoding login attempt: %w", err)
	}
	return s.cookie.seal(body, []byte(LoginCookie))
}

// openAttempt opens the pre-login cookie and checks it belongs to state.
func (s *states) openAttempt(value string, st statePayload, now time.Time) (attempt, error) {
	body, err := s.cookie.open(value, []byte(LoginCookie))
	if err != nil {
		return attempt{}, err
	}
	var a attempt
	if err := json.Unmarshal(body, &a); err != nil || now.Unix() >= a.Expiry {
		return attempt{}, errInvalid
	}
	if !hmac.Equal([]byte(a.StateID), []byte(st.ID)) {
		return attempt{}, errInvalid
	}
	return a, nil
}

var (
	errorNoLoginCookie = errors.New("no pre-login cookie: the login started in another browser or expired")
	errStateReplayed   = errors.New("state already used")
)
