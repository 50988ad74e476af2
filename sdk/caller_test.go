package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/sdk"
)

func TestCallerConfig(t *testing.T) {
	hc := sdk.HubConfig{
		HubURL: "https://hub.internal:6443/",
		RestConfig: &rest.Config{
			Host: "https://hub.internal:6443", BearerToken: "provider-secret",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA"), ServerName: "hub", CertData: []byte("provider-cert")},
		},
	}
	user := http.Header{"X-Kedge-User": {"alice"}, "X-Kedge-Tenant": {"root:acme"}, "Authorization": {"Bearer alice-token"}}
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				h.Del(kv[i])
			} else {
				h.Set(kv[i], kv[i+1])
			}
		}
		return h
	}
	tests := []struct {
		name     string
		hdr      http.Header
		noHub    bool
		wantHost string
		wantTok  string
		wantNoC  bool // errors.Is ErrNoCaller
		wantErr  bool
	}{
		{name: "caller", hdr: user, wantHost: "https://hub.internal:6443/clusters/root:acme", wantTok: "alice-token"},
		{name: "lower-case bearer", hdr: with(user, "Authorization", "bearer  t2 "), wantHost: "https://hub.internal:6443/clusters/root:acme", wantTok: "t2"},
		{name: "no user", hdr: with(user, "X-Kedge-User", ""), wantErr: true, wantNoC: true},
		{name: "no tenant", hdr: with(user, "X-Kedge-Tenant", ""), wantErr: true, wantNoC: true},
		{name: "no token", hdr: with(user, "Authorization", ""), wantErr: true, wantNoC: true},
		{name: "basic auth", hdr: with(user, "Authorization", "Basic YTpi"), wantErr: true, wantNoC: true},
		{name: "tenant escapes path", hdr: with(user, "X-Kedge-Tenant", "../../api"), wantErr: true},
		{name: "tenant with query", hdr: with(user, "X-Kedge-Tenant", "root?x=1"), wantErr: true},
		{name: "not served by sdk", hdr: user, noHub: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if !tt.noHub {
				ctx = sdk.WithHubConfig(ctx, hc)
			}
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://provider/x", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header = tt.hdr
			cfg, err := sdk.CallerConfig(r)
			if (err != nil) != tt.wantErr || tt.wantNoC != errors.Is(err, sdk.ErrNoCaller) {
				t.Fatalf("err = %v, wantErr %v, wantNoCaller %v", err, tt.wantErr, tt.wantNoC)
			}
			if err != nil {
				return
			}
			if cfg.Host != tt.wantHost || cfg.BearerToken != tt.wantTok {
				t.Fatalf("cfg = %s %q, want %s %q", cfg.Host, cfg.BearerToken, tt.wantHost, tt.wantTok)
			}
			// The hub's trust settings carry over; the provider's own
			// credentials must not.
			if string(cfg.CAData) != "CA" || cfg.ServerName != "hub" || cfg.CertData != nil || cfg.Impersonate.UserName != "" {
				t.Fatalf("TLS/credentials leaked or lost: %+v", cfg.TLSClientConfig)
			}
		})
	}
}
