package resourceproxy

import (
	"context"

	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
	"github.com/wharfhub/wharf/sdk"
)

// Config is the operator's provider config (YAML, via
// HubConfig.DecodeConfig; --provider-config resource-proxy=file.yaml):
//
//	targetPolicy:
//	  allowCIDRs: ["127.0.0.0/8", "::1/128"]
//	  denyCIDRs: ["10.96.0.0/12"]
//
// An empty config is the built-in target policy (package targetpolicy).
type Config struct {
	TargetPolicy targetpolicy.Config `json:"targetPolicy,omitempty"`
}

// policyFor builds the target policy of hc's config. The hub's own URLs
// are refused besides the host's interface addresses: the provider runs
// on the hub's host, and the hub's external URL may name a load balancer
// in front of it.
func policyFor(ctx context.Context, hc sdk.HubConfig) (*targetpolicy.Policy, error) {
	var cfg Config
	if err := hc.DecodeConfig(&cfg); err != nil {
		return nil, err
	}
	hub := []string{hc.HubURL}
	if hc.RestConfig != nil {
		hub = append(hub, hc.RestConfig.Host)
	}
	return targetpolicy.New(ctx, cfg.TargetPolicy, targetpolicy.Options{HubURLs: hub})
}
