package login

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// WellKnownPath is where a hub describes how to log in to it.
const WellKnownPath = "/.well-known/wharf"

// Discovery is the hub's answer at WellKnownPath.
type Discovery struct {
	HubURL     string      `json:"hubURL"`
	OIDC       *OIDCConfig `json:"oidc,omitempty"`
	TokenLogin bool        `json:"tokenLogin"`
}

// OIDCConfig is the IdP and client the CLI logs in with.
type OIDCConfig struct {
	IssuerURL           string   `json:"issuerURL"`
	ClientID            string   `json:"clientID"`
	Scopes              []string `json:"scopes,omitempty"`
	DeviceAuthorization bool     `json:"deviceAuthorization,omitempty"`
}

// Discover fetches hubURL's /.well-known/wharf.
func Discover(ctx context.Context, hc *http.Client, hubURL string) (Discovery, error) {
	var d Discovery
	if _, err := httpsURL("hub URL", hubURL); err != nil {
		return d, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(hubURL, "/")+WellKnownPath, nil)
	if err != nil {
		return d, fmt.Errorf("building discovery request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return d, fmt.Errorf("fetching %s: %w", WellKnownPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return d, fmt.Errorf("reading %s: %w", WellKnownPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("%s answered %s", WellKnownPath, resp.Status)
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return d, fmt.Errorf("decoding %s: %w", WellKnownPath, err)
	}
	if d.HubURL == "" {
		d.HubURL = hubURL
	}
	return d, nil
}
