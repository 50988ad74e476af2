package idp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/idp"
)

func TestCodeFlowWithPKCE(t *testing.T) {
	p := start(t, false)
	c := browser(t, p)
	code := login(t, p, c, "verifier-0123456789-0123456789-0123456789")
	status, tk := token(t, p, c, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {"verifier-0123456789-0123456789-0123456789"}})
	if status != http.StatusOK {
		t.Fatalf("code exchange: %d %s", status, tk.Error)
	}
	if tk.RefreshToken == "" || tk.AccessToken == "" {
		t.Fatal("offline_access granted no refresh or access token")
	}
	claims := verify(t, p, c, tk.IDToken)
	if claims["iss"] != p.URL || claims["aud"] != clientID && !slices.Contains(anySlice(claims["aud"]), any(clientID)) {
		t.Errorf("iss/aud = %v/%v", claims["iss"], claims["aud"])
	}
	if claims["email"] != ada.Email || claims["email_verified"] != true || claims["name"] != ada.Username || claims["sub"] != "sub-ada" {
		t.Errorf("claims %v do not describe ada", claims)
	}
	if g := anySlice(claims["groups"]); len(g) != 2 || g[0] != "dev" || g[1] != "ops" {
		t.Errorf("groups = %v", claims["groups"])
	}
	// The code is single-use.
	if status, _ := token(t, p, c, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {"verifier-0123456789-0123456789-0123456789"}}); status != http.StatusBadRequest {
		t.Errorf("replayed code: %d, want 400", status)
	}
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

func TestWrongPasswordRefused(t *testing.T) {
	p := start(t, false)
	c := browser(t, p)
	page := authorize(t, p, c, "st", "verifier-0123456789-0123456789-0123456789")
	for _, cred := range [][2]string{{"ada", "wrong"}, {"nobody", "lovelace"}, {"ada", ""}} {
		resp, err := submit(c, page, cred[0], cred[1])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("login %s/%q: %d, want 401", cred[0], cred[1], resp.StatusCode)
		}
	}
}

func TestPKCEVerifierMismatchRefused(t *testing.T) {
	p := start(t, false)
	c := browser(t, p)
	for name, verifier := range map[string]string{"wrong verifier": "another-verifier-0123456789-0123456789-01", "no verifier": ""} {
		t.Run(name, func(t *testing.T) {
			code := login(t, p, c, "verifier-0123456789-0123456789-0123456789")
			status, tk := token(t, p, c, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}})
			if status != http.StatusBadRequest || tk.IDToken != "" {
				t.Errorf("exchange with %s: %d %q, want 400 and no token", name, status, tk.Error)
			}
		})
	}
}

func TestRefreshRotates(t *testing.T) {
	p := start(t, false)
	c := browser(t, p)
	v := "verifier-0123456789-0123456789-0123456789"
	_, first := token(t, p, c, url.Values{"grant_type": {"authorization_code"}, "code": {login(t, p, c, v)}, "redirect_uri": {redirectURI}, "code_verifier": {v}})
	status, second := token(t, p, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}})
	if status != http.StatusOK || second.IDToken == "" || second.RefreshToken == "" {
		t.Fatalf("refresh: %d %s", status, second.Error)
	}
	if second.RefreshToken == first.RefreshToken {
		t.Fatal("refresh token was not rotated")
	}
	if claims := verify(t, p, c, second.IDToken); claims["email"] != ada.Email {
		t.Errorf("refreshed ID token claims %v", claims)
	}
	if status, tk := token(t, p, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}}); status != http.StatusBadRequest {
		t.Errorf("old refresh token: %d %q, want 400", status, tk.Error)
	}
	if status, _ := token(t, p, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {second.RefreshToken}}); status != http.StatusOK {
		t.Errorf("new refresh token: %d, want 200", status)
	}
}

func TestDeviceFlow(t *testing.T) {
	p := start(t, true)
	c := browser(t, p)
	resp, err := c.PostForm(p.URL+"/device_authorization", url.Values{"client_id": {clientID}, "scope": {"openid email groups offline_access"}})
	if err != nil {
		t.Fatal(err)
	}
	var da struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURIComplete string `json:"verification_uri_complete"`
	}
	err = json.NewDecoder(resp.Body).Decode(&da)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || da.DeviceCode == "" {
		t.Fatalf("device authorization: %d %v %+v", resp.StatusCode, err, da)
	}
	poll := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {da.DeviceCode}}
	if status, tk := token(t, p, c, poll); status != http.StatusBadRequest || tk.Error != "authorization_pending" {
		t.Fatalf("before approval: %d %q, want authorization_pending", status, tk.Error)
	}
	// The user opens the verification URI and logs in.
	page, err := c.Get(da.VerificationURIComplete)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if r, err := submit(c, da.VerificationURIComplete, ada.Username, "wrong"); err != nil || r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("approval with a wrong password: %v %v", r, err)
	}
	if r, err := submit(c, da.VerificationURIComplete, ada.Username, ada.Password); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("approval: %v %v", r, err)
	}
	status, tk := token(t, p, c, poll)
	if status != http.StatusOK || tk.RefreshToken == "" {
		t.Fatalf("after approval: %d %q", status, tk.Error)
	}
	if claims := verify(t, p, c, tk.IDToken); claims["email"] != ada.Email {
		t.Errorf("device ID token claims %v", claims)
	}
	if status, _ := token(t, p, c, poll); status == http.StatusOK {
		t.Error("device code redeemed twice")
	}
}

func TestDeviceFlowOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		p := start(t, enabled)
		resp, err := browser(t, p).Get(p.URL + "/.well-known/openid-configuration")
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if _, ok := doc["device_authorization_endpoint"]; ok != enabled || doc["token_endpoint"] == nil {
			t.Errorf("DeviceFlow=%v: discovery device endpoint present=%v", enabled, ok)
		}
	}
}

func TestApproveDevice(t *testing.T) {
	p := start(t, true)
	if err := p.ApproveDevice(context.Background(), "NOPE-NOPE", "ada"); err == nil {
		t.Error("unknown user code approved")
	}
}

func submit(c *http.Client, page, user, pass string) (*http.Response, error) {
	r, err := idpSubmit(c, page, user, pass)
	if err == nil {
		r.Body.Close()
	}
	return r, err
}

func TestConfidentialClient(t *testing.T) {
	const hubRedirect = "https://127.0.0.1:40002/auth/callback"
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{{ID: "hub", Secret: "s3cret", RedirectURIs: []string{hubRedirect}}},
		Users:   []idp.User{ada},
	})
	c := browser(t, p)
	c.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host == "127.0.0.1:40002" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	q := url.Values{"client_id": {"hub"}, "redirect_uri": {hubRedirect}, "response_type": {"code"}, "scope": {"openid email groups"}, "state": {"s"}}
	resp, err := c.Get(p.URL + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = idp.SubmitLogin(context.Background(), c, resp.Request.URL.String(), ada.Username, ada.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if resp.StatusCode != http.StatusFound || code == "" {
		t.Fatalf("login: %d %s", resp.StatusCode, loc)
	}
	exchange := func(secret string) int {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/oauth/token", strings.NewReader(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {hubRedirect}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("hub", secret)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := exchange("wrong"); got == http.StatusOK {
		t.Error("code exchanged with a wrong client secret")
	}
	if got := exchange("s3cret"); got != http.StatusOK {
		t.Errorf("code exchange with the client secret: %d", got)
	}
}
