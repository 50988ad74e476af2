package sdk

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Provider is what a provider author hands to Serve. Manifest is called once,
// when the plugin starts; its handlers may depend on state that Start sets up
// later, because the hub sends no traffic before Start returns.
type Provider interface {
	Manifest() Manifest
}

// Starter is an optional Provider hook, called once with the hub's config
// before the socket accepts requests. An error fails the start.
type Starter interface {
	Start(ctx context.Context, hc HubConfig) error
}

// Stopper is an optional Provider hook, called when the hub stops the
// provider, after the socket stops accepting new requests.
type Stopper interface {
	Stop(ctx context.Context) error
}

// HealthChecker is an optional Provider hook behind the hub's health pings.
// Returning an error makes the hub restart the provider, so report only what
// a restart can fix.
type HealthChecker interface {
	Healthy(ctx context.Context) error
}

// HubConfig is what the hub tells a provider at Start.
type HubConfig struct {
	// HubURL is the hub's internal URL; workspaces live under
	// HubURL/clusters/<workspace path>.
	HubURL string
	// RestConfig acts as the provider itself, scoped by the hub to the
	// workspaces where the provider is enabled. Use it for controllers and
	// background work; use CallerConfig to act for a user.
	RestConfig *rest.Config
	// DataDir is a directory private to this provider for persistent state.
	DataDir string
	// Config is the operator's provider config file (usually YAML), as-is.
	Config []byte
}

// DecodeConfig unmarshals the operator's provider config (YAML or JSON) into
// v. Empty config leaves v untouched.
func (hc HubConfig) DecodeConfig(v any) error {
	if len(hc.Config) == 0 {
		return nil
	}
	if err := yaml.UnmarshalStrict(hc.Config, v); err != nil {
		return fmt.Errorf("provider config: %w", err)
	}
	return nil
}
