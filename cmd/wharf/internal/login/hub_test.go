package login

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestNoBearerOverHTTP: neither the static token nor an ID token is ever
// sent to a plain-http hub URL; the server must not even be contacted.
func TestNoBearerOverHTTP(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	ctx := context.Background()
	if _, err := TokenLogin(ctx, srv.Client(), srv.URL, "secret"); err == nil {
		t.Error("TokenLogin accepted an http hub URL")
	}
	if _, err := HomeWorkspace(ctx, srv.Client(), srv.URL, "id-token"); err == nil {
		t.Error("HomeWorkspace accepted an http hub URL")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the http server got %d requests", n)
	}
}
