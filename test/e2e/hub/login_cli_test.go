package hub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCLIBootstrap: /.well-known/wharf, an ID token of the CLI client as
// a bearer, and /auth/token-login's kubeconfig used by real kubectl.
func TestCLIBootstrap(t *testing.T) {
	t.Parallel()
	h, p := loginHub(t)
	code, body, err := h.getAs("", "/.well-known/wharf")
	var doc struct {
		HubURL string `json:"hubURL"`
		OIDC   *struct {
			IssuerURL           string   `json:"issuerURL"`
			ClientID            string   `json:"clientID"`
			Scopes              []string `json:"scopes"`
			DeviceAuthorization bool     `json:"deviceAuthorization"`
		} `json:"oidc"`
		TokenLogin bool `json:"tokenLogin"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil {
		t.Fatalf("/.well-known/wharf: %d %s %v", code, body, err)
	}
	if doc.HubURL != h.URL || doc.OIDC == nil || doc.OIDC.IssuerURL != p.URL || doc.OIDC.ClientID != "wharf-cli" ||
		strings.Join(doc.OIDC.Scopes, " ") != "openid email profile groups offline_access" || doc.OIDC.DeviceAuthorization || !doc.TokenLogin {
		t.Fatalf("/.well-known/wharf = %s", body)
	}

	idTok := cliIDToken(t, h, p)
	eventually(t, 30*time.Second, func() error {
		if code, body, err := h.getAs(idTok, "/version"); code != http.StatusOK {
			return fmt.Errorf("ID token of the CLI client as bearer: %d %s %v", code, body, err)
		}
		return nil
	})
	if name, groups := selfReview(t, h, idTok); name != "ada@example.com" || strings.Join(groups, ",") != "dev,ops,system:authenticated" {
		t.Errorf("CLI ID token identity: %s %v", name, groups)
	}

	post := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/auth/token-login", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for what, tok := range map[string]string{"no token": "", "wrong token": "not-the-admin-token", "ID token": idTok} {
		if code, body := post(tok); code != http.StatusUnauthorized {
			t.Errorf("token-login with %s: %d %s, want 401", what, code, body)
		}
	}
	code, kubeconfig := post(h.Token)
	if code != http.StatusOK || !strings.Contains(kubeconfig, "server: "+h.URL+"/clusters/root") {
		t.Fatalf("token-login: %d %s", code, kubeconfig)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(h.kubectlBin, "--kubeconfig", path, "get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "namespace/default") {
		t.Fatalf("kubectl with the token-login kubeconfig: %v\n%s", err, out)
	}
	if strings.Contains(h.log.String(), idTok) {
		t.Error("hub log contains the ID token")
	}

	// Login endpoints are rate-limited per client address (burst 20 by
	// default): a flood of guesses ends in 429 with Retry-After.
	limited := false
	for range 40 {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/auth/token-login", nil)
		req.Header.Set("Authorization", "Bearer guess")
		resp, err := h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = resp.Header.Get("Retry-After") != "" && resp.Header.Get("Content-Type") == "application/json"
			break
		}
	}
	if !limited {
		t.Error("40 token-login attempts from one address were never limited with a 429 Status and Retry-After")
	}
}
