package authn_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wharfhub/wharf/test/idp"
)

// BenchmarkAuthenticate is the per-request cost of each token type through
// the whole union, OIDC with a warm key cache (discovery and JWKS fetched
// once before the timer starts). Service-account tokens join when built.
func BenchmarkAuthenticate(b *testing.B) {
	p := idp.Start(b)
	a := newAuth(b, p)
	for _, bc := range []struct{ name, token string }{
		{"static/admin", adminToken},
		{"static/token-file", "file-token"},
		{"oidc/valid", p.Sign(b, p.Claims(clientID, nil))},
		{"rejected/garbage", "garbage"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/api", nil)
			for b.Loop() {
				r.Header.Set("Authorization", "Bearer "+bc.token)
				if _, ok, _ := a.AuthenticateRequest(r); ok != (bc.name != "rejected/garbage") {
					b.Fatalf("authenticated=%v", ok)
				}
			}
		})
	}
}
