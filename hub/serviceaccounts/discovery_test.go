package serviceaccounts

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDiscovery(t *testing.T) {
	tokens := newTokens(t, newKey(t), issuer)
	d, err := NewDiscovery(tokens, issuer+"/")
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.HandlerFunc, method, accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		h(w, r)
		return w
	}
	w := get(d.ServeConfig, http.MethodGet, "")
	var cfg map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &cfg); err != nil || w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("config: %d %s %v", w.Code, w.Body, err)
	}
	if cfg["issuer"] != issuer || cfg["jwks_uri"] != issuer+JWKSPath || len(cfg) != 5 {
		t.Fatalf("config: %v", cfg)
	}
	w = get(d.ServeJWKS, http.MethodGet, "application/jwk-set+json, */*;q=0.1")
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &set); err != nil || len(set.Keys) != 1 || set.Keys[0]["kid"] != tokens.key.ID() || set.Keys[0]["d"] != nil {
		t.Fatalf("jwks: %s %v", w.Body, err)
	}
	if w := get(d.ServeJWKS, http.MethodGet, "application/json"); w.Code != http.StatusNotAcceptable {
		t.Fatalf("jwks as application/json: %d", w.Code)
	}
	if w := get(d.ServeConfig, http.MethodPost, ""); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", w.Code)
	}
}
