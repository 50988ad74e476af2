package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/idp"
)

// TestOIDCBearer runs the hub against a real OpenID Provider (zitadel op on
// loopback TLS) and calls the API with ID tokens as bearers: discovery,
// claim mapping with prefixes, rejection of bad tokens with one generic
// 401, key rotation, and no token in the hub's log.
func TestOIDCBearer(t *testing.T) {
	p := idp.Start(t)
	h := startHub(t, hubOptions{extraArgs: []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile,
		"--oidc-username-prefix=oidc:", "--oidc-groups-claim=groups", "--oidc-groups-prefix=oidc:",
		"--oidc-required-claim=tenant=acme",
	}})
	claims := func(mod func(map[string]any)) map[string]any {
		return p.Claims("wharf", func(c map[string]any) {
			c["tenant"] = "acme"
			if mod != nil {
				mod(c)
			}
		})
	}
	valid := p.Sign(t, claims(nil))

	// Discovery runs in the background after start: wait for it, then
	// the identity must be exactly the prefixed claims.
	eventually(t, 30*time.Second, func() error {
		if code, body, err := h.getAs(valid, "/version"); code != http.StatusOK {
			return fmt.Errorf("GET /version with ID token: %d %s %v", code, body, err)
		}
		return nil
	})
	name, groups := selfReview(t, h, valid)
	if name != "oidc:ada@example.com" || !slices.Equal(groups, []string{"oidc:dev", "oidc:ops", "system:authenticated"}) {
		t.Fatalf("whoami = %s %v", name, groups)
	}

	bad := map[string]string{
		"expired":        p.Sign(t, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
		"wrong audience": p.Sign(t, claims(func(c map[string]any) { c["aud"] = "other" })),
		"wrong issuer":   p.Sign(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example.com" })),
		"forged":         idp.SignWith(t, idp.NewKey(t, p.SigningKeyID()), claims(nil)),
		"missing claim":  p.Sign(t, p.Claims("wharf", nil)),
		"garbage":        "not-a-token",
	}
	bodies := map[string]bool{}
	for what, tok := range bad {
		code, body, err := h.getAs(tok, "/version")
		if err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s: got %d %s %v, want 401", what, code, body, err)
		}
		bodies[body] = true
	}
	if len(bodies) != 1 {
		t.Errorf("401 bodies differ by cause: %v", bodies)
	}

	p.Rotate(t)
	rotated := p.Sign(t, claims(nil))
	if code, body, err := h.getAs(rotated, "/version"); code != http.StatusOK {
		t.Errorf("token signed with rotated key: %d %s %v", code, body, err)
	}
	if code, _, _ := h.get("/version"); code != http.StatusOK {
		t.Errorf("admin token after OIDC: %d", code)
	}

	log := h.log.String()
	for what, tok := range map[string]string{"valid": valid, "rotated": rotated, "expired": bad["expired"], "forged": bad["forged"]} {
		if strings.Contains(log, tok) {
			t.Errorf("hub log contains the %s token", what)
		}
	}
}

// selfReview asks the hub who the bearer of token is (SelfSubjectReview).
func selfReview(t *testing.T, h *hubProc, token string) (string, []string) {
	t.Helper()
	code, body := h.doAs(token, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("SelfSubjectReview: %d %s", code, body)
	}
	var r struct {
		Status struct {
			UserInfo struct {
				Username string   `json:"username"`
				Groups   []string `json:"groups"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("SelfSubjectReview body %q: %v", body, err)
	}
	return r.Status.UserInfo.Username, r.Status.UserInfo.Groups
}
