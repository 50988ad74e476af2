package login

import (
	"net/http"
	"time"

	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/coreos/go-oidc/v3/oidc"
)

// loginCookiePath is the pre-login cookie's path. The __Host- prefix
// demands "/": the cookie is then sent with every request for its 10
// minutes, which is harmless because only the callback reads it and the
// backend proxy strips it (IsHubCookie).
const loginCookiePath = "/"

// login starts the authorization code flow with PKCE (S256): a fresh
// state id and nonce, sealed into the pre-login cookie with the return
// path, and a verifier derived from the id that never leaves the hub;
// only the signed state id, the nonce and the verifier's S256 challenge go
// to the IdP.
func (l *Login) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET")
		return
	}
	if l.idp == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "browser login is not configured (--oidc-issuer-url)")
		return
	}
	then, ok := SafeRedirect(r.URL.Query().Get("then"))
	if !ok {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "then must be a path on this hub")
		return
	}
	log := klog.FromContext(r.Context())
	d, err := l.idp.discover(r.Context())
	if err != nil {
		log.Error(err, "Browser login: IdP unavailable")
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "identity provider unavailable")
		return
	}
	now := l.cfg.Clock.Now()
	id, err1 := randomID(16)
	nonce, err2 := randomID(16)
	if err1 != nil || err2 != nil {
		internalError(w, r, err1, err2)
		return
	}
	a := attempt{StateID: id, Verifier: l.states.verifier(id), Nonce: nonce, Then: then, Expiry: now.Add(stateTTL).Unix()}
	sealed, err := l.states.sealAttempt(a)
	if err != nil {
		internalError(w, r, err)
		return
	}
	state := l.states.sign(statePayload{ID: id, Expiry: a.Expiry})
	http.SetCookie(w, &http.Cookie{
		Name: LoginCookie, Value: sealed, Path: loginCookiePath, MaxAge: int(stateTTL.Seconds()),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	to := l.idp.oauth2(d).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(a.Verifier))
	http.Redirect(w, r, to, http.StatusFound)
}

// callback finishes a login. The state must be authentic, unexpired,
// belong to this browser's pre-login cookie and be unused (etcd, all
// replicas); then the code is exchanged with the PKCE verifier, the ID
// token verified (nonce included) and mapped to the hub identity, and the
// session created. Every state failure answers the same 400.
func (l *Login) callback(w http.ResponseWriter, r *http.Request, d Deps) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	if l.idp == nil || d.IDTokens == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "browser login is not configured (--oidc-issuer-url)")
		return
	}
	log := klog.FromContext(r.Context())
	now := l.cfg.Clock.Now()
	q := r.URL.Query()
	a, err := l.checkState(r, q.Get("state"), now)
	if err != nil {
		log.V(2).Info("Browser login: state refused", "reason", err)
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "invalid or expired login attempt; start again at "+LoginPath)
		return
	}
	http.SetCookie(w, clearCookie(LoginCookie, loginCookiePath))
	if e := q.Get("error"); e != "" {
		log.V(2).Info("Browser login: IdP returned an error", "error", e)
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "login was not completed at the identity provider")
		return
	}
	prov, err := l.idp.discover(r.Context())
	if err != nil {
		log.Error(err, "Browser login: IdP unavailable")
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "identity provider unavailable")
		return
	}
	tok, err := l.idp.oauth2(prov).Exchange(l.idp.ctx(r.Context()), q.Get("code"), oauth2.VerifierOption(a.Verifier))
	if err != nil {
		log.V(2).Info("Browser login: code exchange failed", "err", redactOAuth(err))
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "login failed")
		return
	}
	s, err := l.identify(r.Context(), d, prov, tok, a.Nonce)
	if err != nil {
		log.V(2).Info("Browser login: identity refused", "err", err)
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "login failed")
		return
	}
	if s.ID, err = randomID(24); err != nil {
		internalError(w, r, err)
		return
	}
	if s.CSRF, err = randomID(24); err != nil {
		internalError(w, r, err)
		return
	}
	s.Expiry = now.Add(l.cfg.Options.SessionMaxAge).Unix()
	s.Revalidate = min(s.Revalidate, s.Expiry)
	value, err := l.sessions.seal(s)
	if err != nil {
		internalError(w, r, err)
		return
	}
	rt, err := l.store.sealToken(s.ID, tok.RefreshToken)
	if err != nil {
		internalError(w, r, err)
		return
	}
	if err := l.store.createSession(r.Context(), s.ID, record{RefreshToken: rt, Current: value}, time.Unix(s.Expiry, 0)); err != nil {
		internalError(w, r, err)
		return
	}
	log.V(1).Info("Browser login", "user", s.User, "session", shortID(s.ID), "refreshable", tok.RefreshToken != "")
	http.SetCookie(w, sessionCookie(value, time.Unix(s.Expiry, 0), now))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, a.Then, http.StatusFound)
}

// checkState verifies the state parameter against the pre-login cookie and
// consumes it.
func (l *Login) checkState(r *http.Request, state string, now time.Time) (attempt, error) {
	st, err := l.states.verify(state, now)
	if err != nil {
		return attempt{}, err
	}
	c, err := r.Cookie(LoginCookie)
	if err != nil {
		return attempt{}, errorNoLoginCookie
	}
	a, err := l.states.openAttempt(c.Value, st, now)
	if err != nil {
		return attempt{}, err
	}
	fresh, err := l.store.consumeState(r.Context(), st.ID, time.Unix(st.Expiry, 0))
	if err != nil {
		return attempt{}, err
	}
	if !fresh {
		return attempt{}, errStateReplayed
	}
	a.Verifier = l.states.verifier(st.ID)
	return a, nil
}

// logout ends the session on every replica (its etcd record, with the
// refresh token, is deleted) and clears the cookie. It sits behind
// WithCSRF, so a cross-site page cannot log a user out.
func (l *Login) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	if s, ok, err := l.sessions.fromRequest(r, l.cfg.Clock.Now()); ok && err == nil {
		if err := l.store.deleteSession(r.Context(), s.ID); err != nil {
			internalError(w, r, err)
			return
		}
		klog.FromContext(r.Context()).V(1).Info("Browser logout", "user", s.User, "session", shortID(s.ID))
	}
	http.SetCookie(w, clearCookie(SessionCookie, "/"))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// sessionInfo is GET /auth/session: what the portal needs, including the
// CSRF token it must echo. The cookie itself stays unreadable to scripts.
type sessionInfo struct {
	User      string    `json:"user"`
	Groups    []string  `json:"groups"`
	CSRFToken string    `json:"csrfToken,omitempty"`
	Expiry    time.Time `json:"expiry"`
}

func (l *Login) session(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	s, err := l.auth.session(r)
	if err != nil || s == nil {
		if err != nil {
			klog.FromContext(r.Context()).V(2).Info("Session refused", "err", err)
		}
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	}
	info := sessionInfo{User: s.User, Groups: s.Groups, CSRFToken: s.CSRF, Expiry: time.Unix(s.Expiry, 0).UTC()}
	if browserFetch(r) {
		// A page script asks: it may be a provider's, so no token (see
		// DocumentCSRF for how the shell gets it).
		info.CSRFToken = ""
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, info)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "use "+allow)
}

func internalError(w http.ResponseWriter, r *http.Request, errs ...error) {
	for _, err := range errs {
		if err != nil {
			klog.FromContext(r.Context()).Error(err, "Login")
		}
	}
	writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "login failed")
}
