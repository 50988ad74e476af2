package idp

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<title>Test IdP login</title>
<form method="post" action="{{.Action}}">
<input type="hidden" name="{{.IDName}}" value="{{.ID}}">
<label>Username <input name="username"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Log in</button>
</form>
`))

// loginHandler serves the login form at /login for the authorization code
// flow and at /device for the device flow (the op's UserFormPath).
type loginHandler struct {
	store    *storage
	callback func(ctx context.Context, authRequestID string) string
}

func (h *loginHandler) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.form(w, "/login", "authRequestID", r.URL.Query().Get("authRequestID"))
	case http.MethodPost:
		id := r.PostFormValue("authRequestID")
		if err := h.store.completeLogin(id, r.PostFormValue("username"), r.PostFormValue("password")); err != nil {
			http.Error(w, "login failed", http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, h.callback(r.Context(), id), http.StatusFound)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *loginHandler) device(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.form(w, "/device", "user_code", r.URL.Query().Get("user_code"))
	case http.MethodPost:
		user, pass := r.PostFormValue("username"), r.PostFormValue("password")
		if _, ok := h.store.checkPassword(user, pass); !ok {
			http.Error(w, "login failed", http.StatusUnauthorized)
			return
		}
		if err := h.store.approveDevice(r.PostFormValue("user_code"), user); err != nil {
			http.Error(w, "unknown or expired code", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "Device approved. You can close this window.")
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *loginHandler) form(w http.ResponseWriter, action, idName, id string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginPage.Execute(w, map[string]string{"Action": action, "IDName": idName, "ID": id})
}

// SubmitLogin posts user and pass to the login form at loginPageURL (the
// /login?authRequestID=... page the authorize endpoint redirected to, or
// the device page /device?user_code=...) the way a browser submits it.
// Whether the redirects after a successful login (op callback, then the
// relying party's redirect_uri) are followed is up to client.CheckRedirect.
func SubmitLogin(ctx context.Context, client *http.Client, loginPageURL, user, pass string) (*http.Response, error) {
	u, err := url.Parse(loginPageURL)
	if err != nil {
		return nil, fmt.Errorf("parsing login page URL: %w", err)
	}
	form := url.Values{"username": {user}, "password": {pass}}
	q := u.Query()
	switch {
	case q.Has("authRequestID"):
		form.Set("authRequestID", q.Get("authRequestID"))
	case q.Has("user_code"):
		form.Set("user_code", q.Get("user_code"))
	default:
		return nil, fmt.Errorf("%s is not a login page URL", u.Redacted())
	}
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("building login request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("submitting login: %w", err)
	}
	return resp, nil
}
