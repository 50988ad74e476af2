package login

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// TokenSessionPath is POST /auth/token-session: the portal's token form.
// Where /auth/token-login hands the CLI a kubeconfig, this turns the same
// static token into the browser session cookie an OIDC login gives.
const TokenSessionPath = "/auth/token-session"

// maxTokenForm bounds the token form's body; a static token is short.
const maxTokenForm = 8 << 10

// tokenSession is POST /auth/token-session (development). The body is a
// form (token=…) or JSON ({"token":"…"}); the answer is 204 with the
// HttpOnly session cookie, or the same 401 for every refused token. The
// token itself is never stored: the session holds the identity it
// authenticated, so a browser never keeps a bearer credential. Such a
// session has no refresh token and needs no revalidation with an IdP; it
// ends at --session-max-age or logout.
//
// The request must come from the hub's own origin: otherwise any site
// could sign a visitor in as the site's own account (login CSRF) and
// watch what they do there.
func (l *Login) tokenSession(w http.ResponseWriter, r *http.Request, d Deps) {
	if !l.tokenLoginEnabled() || d.StaticTokens == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "token login is disabled (--enable-token-login)")
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	if !sameOrigin(r, originOf(l.cfg.ExternalURL)) {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, "cross-site request refused: token sign-in needs a same-origin Origin")
		return
	}
	log := klog.FromContext(r.Context())
	token, err := formToken(r)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	resp, ok, err := d.StaticTokens.AuthenticateToken(r.Context(), token)
	if err != nil || !ok {
		log.V(2).Info("Token sign-in refused", "err", err)
		unauthorized(w)
		return
	}
	now := l.cfg.Clock.Now()
	u := resp.User
	s := Session{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if s.ID, err = randomID(24); err != nil {
		internalError(w, r, err)
		return
	}
	if s.CSRF, err = randomID(24); err != nil {
		internalError(w, r, err)
		return
	}
	s.Expiry = now.Add(l.cfg.Options.SessionMaxAge).Unix()
	s.Revalidate = s.Expiry // static tokens have no IdP to ask again
	value, err := l.sessions.seal(s)
	if err != nil {
		internalError(w, r, err)
		return
	}
	if err := l.store.createSession(r.Context(), s.ID, record{Current: value}, time.Unix(s.Expiry, 0)); err != nil {
		internalError(w, r, err)
		return
	}
	log.V(1).Info("Token sign-in", "user", s.User, "session", shortID(s.ID))
	http.SetCookie(w, sessionCookie(value, time.Unix(s.Expiry, 0), now))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// formToken reads the token from a form or JSON body.
func formToken(r *http.Request) (string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTokenForm+1))
	if err != nil {
		return "", errors.New("reading the request body failed")
	}
	if len(body) > maxTokenForm {
		return "", errors.New("request body too large")
	}
	var token string
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		var v struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return "", errors.New("body is not a JSON object with a token")
		}
		token = v.Token
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if err := r.ParseForm(); err != nil {
			return "", errors.New("body is not a form")
		}
		token = r.PostForm.Get("token")
	default:
		return "", errors.New("send the token as application/x-www-form-urlencoded or application/json")
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", errors.New("token is required")
	}
	return token, nil
}

// browserFetch reports whether r is a subresource request made by a page
// script (fetch or XHR): browsers mark those with Fetch Metadata headers,
// which no script can set or remove. The CSRF token is not handed out on
// such requests: a provider's script runs in the portal's origin and could
// otherwise fetch it and forge state-changing requests as the user. The
// shell gets the token from its own document instead (DocumentCSRF).
func browserFetch(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") != "" && !isDocumentNavigation(r)
}

// isDocumentNavigation: a top-level navigation, which only a person (or
// a script opening a window) starts, and whose response no other page's
// script can read unless it is same-origin and holds that window.
func isDocumentNavigation(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// DocumentCSRF returns the CSRF token of r's valid session when r is a
// top-level document navigation, "" otherwise. The portal writes it into
// the shell page it answers with (no-store), where the shell module reads
// and removes it before any provider script loads; so the token lives
// only in the shell module's closure, never in storage, a global or a
// response a script can fetch.
func (l *Login) DocumentCSRF(r *http.Request) string {
	if !isDocumentNavigation(r) {
		return ""
	}
	s, err := l.auth.session(r)
	if err != nil || s == nil {
		return ""
	}
	return s.CSRF
}
