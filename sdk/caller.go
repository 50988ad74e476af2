package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
)

// ErrNoCaller is returned by CallerConfig for requests without a verified
// user or bearer token, such as those on public paths.
var ErrNoCaller = errors.New("request has no verified caller")

type hubCtxKey struct{}

// WithHubConfig returns ctx carrying hc, which CallerConfig reads. The SDK
// does this for every request it serves; call it yourself only when testing a
// handler without sdk/testkit.
func WithHubConfig(ctx context.Context, hc HubConfig) context.Context {
	return context.WithValue(ctx, hubCtxKey{}, hc)
}

// HubConfigFrom returns the HubConfig the SDK attached to ctx.
func HubConfigFrom(ctx context.Context) (HubConfig, bool) {
	hc, ok := ctx.Value(hubCtxKey{}).(HubConfig)
	return hc, ok
}

// CallerConfig returns a rest config that acts as the caller: the caller's
// bearer token, forwarded untouched by the hub, against the caller's active
// workspace at <hub>/clusters/<tenant>. The hub then authorizes every call as
// the user, so a provider never needs more rights than its users have.
//
// It keeps the hub's CA and server name from the provider's own config but
// never its credentials.
func CallerConfig(r *http.Request) (*rest.Config, error) {
	hc, ok := HubConfigFrom(r.Context())
	if !ok || hc.HubURL == "" {
		return nil, errors.New("caller config: no hub config on request context (not served by the sdk?)")
	}
	id, ok := IdentityFrom(r)
	if !ok {
		return nil, fmt.Errorf("caller config: %w", ErrNoCaller)
	}
	if err := validTenant(id.Tenant); err != nil {
		return nil, fmt.Errorf("caller config: %w", err)
	}
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, fmt.Errorf("caller config: no bearer token: %w", ErrNoCaller)
	}
	base, err := url.Parse(hc.HubURL)
	if err != nil {
		return nil, fmt.Errorf("caller config: hub url: %w", err)
	}
	base.Path = strings.TrimSuffix(base.Path, "/") + "/clusters/" + id.Tenant
	cfg := &rest.Config{Host: base.String(), BearerToken: token}
	if rc := hc.RestConfig; rc != nil {
		cfg.TLSClientConfig = rest.TLSClientConfig{
			Insecure:   rc.Insecure,
			ServerName: rc.ServerName,
			CAFile:     rc.CAFile,
			CAData:     rc.CAData,
		}
		cfg.QPS, cfg.Burst, cfg.Timeout = rc.QPS, rc.Burst, rc.Timeout
	}
	// Impersonation would be wrong here: the caller's own token already says
	// who they are, and the provider must not need impersonate rights.
	return cfg, nil
}

func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// validTenant refuses anything that could escape /clusters/<tenant> in a URL,
// even though the hub asserts the header: defense in depth is cheap here.
func validTenant(t string) error {
	if t == "" {
		return fmt.Errorf("no %s: %w", HeaderTenant, ErrNoCaller)
	}
	for _, c := range t {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == ':' || c >= 'A' && c <= 'Z'
		if !ok {
			return fmt.Errorf("invalid %s %q", HeaderTenant, t)
		}
	}
	return nil
}
