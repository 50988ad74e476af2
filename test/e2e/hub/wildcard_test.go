package hub

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type status struct {
	Kind   string `json:"kind"`
	Code   int    `json:"code"`
	Reason string `json:"reason"`
}

func decodeStatus(t *testing.T, body string) status {
	t.Helper()
	var s status
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.Kind != "Status" {
		t.Fatalf("not a Status: %v %q", err, body)
	}
	return s
}

// TestWildcardAndErrors covers /clusters/*, unknown workspaces and
// unprivileged callers.
func TestWildcardAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens}})
	idA := h.createWorkspace("root", "wa")
	idB := h.createWorkspace("root", "wb")
	h.mustKubectl("root:wa", "create", "configmap", "x")
	h.mustKubectl("root:wb", "create", "configmap", "x")

	// Admin: list across every workspace, each item naming its cluster.
	out := h.mustKubectl("*", "get", "configmaps", "-A", "-o", `jsonpath={range .items[*]}{.metadata.annotations.wharf\.dev/cluster}{"\n"}{end}`)
	if !strings.Contains(out, idA) || !strings.Contains(out, idB) {
		t.Errorf("wildcard list = %q, want both %s and %s", out, idA, idB)
	}

	tests := []struct {
		name  string
		token string
		path  string
		code  int
	}{
		{"wildcard namespaced list", h.Token, "/clusters/*/api/v1/namespaces/default/configmaps", http.StatusBadRequest},
		{"wildcard get", h.Token, "/clusters/*/api/v1/namespaces/default/configmaps/x", http.StatusBadRequest},
		{"wildcard as unprivileged", "alice-token", "/clusters/*/api/v1/configmaps", http.StatusForbidden},
		{"resources as unprivileged", "alice-token", "/clusters/root:wa/api/v1/namespaces/default/configmaps", http.StatusForbidden},
		{"unknown workspace path", h.Token, "/clusters/root:nope/api/v1/namespaces", http.StatusNotFound},
		{"unknown workspace id", h.Token, "/clusters/0123456789abcdef/api/v1/namespaces", http.StatusNotFound},
		{"malformed workspace", h.Token, "/clusters/Not_A_Path/api/v1/namespaces", http.StatusNotFound},
		{"anonymous", "", "/clusters/root/api/v1/namespaces", http.StatusUnauthorized},
		{"bad token", "nope", "/api/v1/namespaces", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, err := h.getAs(tt.token, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Fatalf("GET %s = %d, want %d: %s", tt.path, code, tt.code, body)
			}
			if s := decodeStatus(t, body); s.Code != tt.code {
				t.Fatalf("Status.code = %d, want %d", s.Code, tt.code)
			}
		})
	}

	// A wildcard write is rejected as a bad request.
	if out, err := h.kubectl("*", "create", "configmap", "y"); err == nil || !strings.Contains(out, "only list and watch") {
		t.Errorf("wildcard create: err=%v out=%q", err, out)
	}
	// Unprivileged users may still discover the API.
	if code, body, _ := h.getAs("alice-token", "/apis"); code != http.StatusOK {
		t.Errorf("discovery as alice = %d %s", code, body)
	}
}
