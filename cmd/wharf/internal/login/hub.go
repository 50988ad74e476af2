package login

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// TokenLoginPath exchanges a static token for a kubeconfig (dev mode).
const TokenLoginPath = "/auth/token-login"

// TokenLogin posts token to the hub's /auth/token-login and returns the
// kubeconfig it answers with.
func TokenLogin(ctx context.Context, hc *http.Client, hubURL, token string) ([]byte, error) {
	// A bearer token never goes over plain http, whatever the user typed.
	if _, err := httpsURL("hub URL", hubURL); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(hubURL, "/")+TokenLoginPath, nil)
	if err != nil {
		return nil, fmt.Errorf("building token login request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token login: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading token login answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("token login refused: %s", resp.Status)
	}
	return body, nil
}

// WhoAmIPath answers the caller's identity and home workspace.
const WhoAmIPath = "/api/whoami"

// HomeWorkspace asks the hub for the home workspace of the bearer of
// idToken, "" when it names none.
func HomeWorkspace(ctx context.Context, hc *http.Client, hubURL, idToken string) (string, error) {
	if _, err := httpsURL("hub URL", hubURL); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(hubURL, "/")+WhoAmIPath, nil)
	if err != nil {
		return "", fmt.Errorf("building whoami request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+idToken)
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("whoami: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("whoami answered %s", resp.Status)
	}
	var who struct {
		Home *struct {
			Path string `json:"path"`
		} `json:"home"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&who); err != nil {
		return "", fmt.Errorf("decoding whoami: %w", err)
	}
	if who.Home == nil {
		return "", nil
	}
	return who.Home.Path, nil
}
