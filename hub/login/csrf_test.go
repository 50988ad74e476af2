package login

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

func TestCSRF(t *testing.T) {
	const ext = "https://hub.example:9443"
	x, _ := newSessions(testKey(t))
	a := &SessionAuthenticator{sessions: x, clock: clock.RealClock{}}
	cookie, _ := x.seal(Session{ID: "sid", User: "ada", CSRF: "the-token", Expiry: time.Now().Add(time.Hour).Unix(), Revalidate: time.Now().Add(time.Hour).Unix()})
	reached := false
	h := WithCSRF(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true }), a, ext)
	for _, tc := range []struct {
		name    string
		method  string
		headers map[string]string
		noCook  bool
		allowed bool
	}{
		{name: "GET needs nothing", method: http.MethodGet, allowed: true},
		{name: "HEAD needs nothing", method: http.MethodHead, allowed: true},
		{name: "OPTIONS needs nothing", method: http.MethodOptions, allowed: true},
		{name: "POST with origin and token", method: http.MethodPost, headers: map[string]string{"Origin": ext, CSRFHeader: "the-token"}, allowed: true},
		{name: "origin with explicit default-less form", method: http.MethodPost, headers: map[string]string{"Origin": "HTTPS://HUB.example:9443", CSRFHeader: "the-token"}, allowed: true},
		{name: "Referer instead of Origin", method: http.MethodPut, headers: map[string]string{"Referer": ext + "/portal/x?y", CSRFHeader: "the-token"}, allowed: true},
		{name: "missing header", method: http.MethodPost, headers: map[string]string{"Origin": ext}},
		{name: "wrong token", method: http.MethodDelete, headers: map[string]string{"Origin": ext, CSRFHeader: "other"}},
		{name: "token of another session length", method: http.MethodPatch, headers: map[string]string{"Origin": ext, CSRFHeader: "the-token-x"}},
		{name: "foreign Origin", method: http.MethodPost, headers: map[string]string{"Origin": "https://evil.example", CSRFHeader: "the-token"}},
		{name: "other port", method: http.MethodPost, headers: map[string]string{"Origin": "https://hub.example:9444", CSRFHeader: "the-token"}},
		{name: "http scheme", method: http.MethodPost, headers: map[string]string{"Origin": "http://hub.example:9443", CSRFHeader: "the-token"}},
		{name: "null Origin", method: http.MethodPost, headers: map[string]string{"Origin": "null", CSRFHeader: "the-token"}},
		{name: "foreign Origin, same-origin Referer", method: http.MethodPost, headers: map[string]string{"Origin": "https://evil.example", "Referer": ext + "/", CSRFHeader: "the-token"}},
		{name: "missing Origin and Referer", method: http.MethodPost, headers: map[string]string{CSRFHeader: "the-token"}},
		{name: "foreign Referer", method: http.MethodPost, headers: map[string]string{"Referer": "https://evil.example/" + ext, CSRFHeader: "the-token"}},
		{name: "websocket upgrade from the hub's origin without the token (a provider script)", method: http.MethodGet, headers: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": ext}},
		{name: "websocket upgrade from the hub's origin with the token", method: http.MethodGet, headers: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": ext, CSRFHeader: "the-token"}, allowed: true},
		{name: "websocket upgrade from a foreign origin with the token", method: http.MethodGet, headers: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "https://evil.example", CSRFHeader: "the-token"}},
		{name: "websocket upgrade from a foreign origin", method: http.MethodGet, headers: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Origin": "https://evil.example"}},
		{name: "websocket upgrade without Origin", method: http.MethodGet, headers: map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}},
		{name: "bearer websocket exempt", method: http.MethodGet, headers: map[string]string{"Upgrade": "websocket", "Authorization": "Bearer t", "Origin": "https://evil.example"}, allowed: true},
		{name: "bearer exempt (cookie too)", method: http.MethodPost, headers: map[string]string{"Authorization": "Bearer t", "Origin": "https://evil.example"}, allowed: true},
		{name: "no cookie: authentication decides", method: http.MethodPost, noCook: true, allowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached = false
			r := httptest.NewRequest(tc.method, "/clusters/root/api/v1/namespaces", nil)
			if !tc.noCook {
				r.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
			}
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if reached != tc.allowed {
				t.Fatalf("reached=%v, want %v (status %d %s)", reached, tc.allowed, w.Code, w.Body)
			}
			if !tc.allowed && (w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/json") {
				t.Fatalf("refusal: %d %s %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
		})
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://Hub.Example:443/x": "https://hub.example",
		"https://hub.example":       "https://hub.example",
		"http://hub.example:80":     "http://hub.example",
		"https://[::1]:9443/":       "https://[::1]:9443",
		"null":                      "",
		"/relative":                 "",
	} {
		if got := originOf(in); got != want {
			t.Errorf("originOf(%q) = %q, want %q", in, got, want)
		}
	}
}
