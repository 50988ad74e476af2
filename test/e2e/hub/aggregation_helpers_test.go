package hub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// aggProbe returns test/e2e/aggprobe built as wharf-provider-<name>: the
// binary names the provider (resource-proxy to exercise the protection
// label; a "-single" suffix runs replicas: single).
func aggProbe(t *testing.T, name string) string {
	t.Helper()
	v, _ := binaries.LoadOrStore("./test/e2e/aggprobe#"+name, &binaryBuild{})
	b := v.(*binaryBuild)
	b.once.Do(func() { b.path, b.err = build("./test/e2e/aggprobe", "wharf-provider-"+name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// aggTokens writes static tokens for alice and bob.
func aggTokens(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(p, []byte("alice-token,alice,alice-uid,\"devs\"\nbob-token,bob,bob-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// aggHub starts a hub loading each provider as name=binary.
func aggHub(t *testing.T, opts hubOptions, providers ...string) *hubProc {
	t.Helper()
	opts.extraArgs = append(opts.extraArgs, "--token-auth-file", aggTokens(t))
	for _, p := range providers {
		opts.extraArgs = append(opts.extraArgs, "--provider", p+"="+aggProbe(t, p))
	}
	return startHub(t, opts)
}

// enableProvider binds provider in ws and waits until the hub knows.
func (h *hubProc) enableProvider(ws, provider string) {
	h.t.Helper()
	eventually(h.t, 60*time.Second, func() error {
		out, err := h.applyStdin(ws, fmt.Sprintf("apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: %s\nspec:\n  provider: %s\n", provider, provider), "apply")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// backendAs sends one request to provider's backend route in ws.
func (h *hubProc) backendAs(token, method, ws, provider, path string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.URL+"/services/providers/"+provider+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Wharf-Workspace", ws)
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(resp)
}

// registerProbe has provider create its APIService in ws with its own
// credentials (it may take a moment for the binding to reach the hub's
// authorizer).
func (h *hubProc) registerProbe(ws, provider string, protected bool) {
	h.t.Helper()
	q := ""
	if protected {
		q = "?protected=1"
	}
	eventually(h.t, 60*time.Second, func() error {
		if code, body := h.backendAs(h.Token, http.MethodPost, ws, provider, "/register"+q); code != http.StatusOK {
			return fmt.Errorf("register: %d %s", code, body)
		}
		return nil
	})
}

// probeRequest is one request the probe logged.
type probeRequest struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Headers http.Header `json:"headers"`
}

// probeLog lists what reached provider's /apis.
func (h *hubProc) probeLog(ws, provider string) []probeRequest {
	h.t.Helper()
	code, body := h.backendAs(h.Token, http.MethodGet, ws, provider, "/log")
	if code != http.StatusOK {
		h.t.Fatalf("probe log: %d %s", code, body)
	}
	var out []probeRequest
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// probeEcho is the spec of the probe's one object.
type probeEcho struct {
	User          string   `json:"user"`
	Groups        []string `json:"groups"`
	Tenant        string   `json:"tenant"`
	Cluster       string   `json:"cluster"`
	OriginalPath  string   `json:"originalPath"`
	Provider      string   `json:"provider"`
	Authorization bool     `json:"authorization"`
	Pid           int      `json:"pid"`
}

// reqAs sends a request with extra headers and returns code and body.
func (h *hubProc) reqAs(token, method, path string, hdr http.Header, body string) (int, string, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// getEcho GETs the probe's object in ws through the aggregation route.
func (h *hubProc) getEcho(token, ws string, hdr http.Header) (int, probeEcho, string) {
	h.t.Helper()
	code, body, _ := h.reqAs(token, http.MethodGet, "/clusters/"+ws+"/apis/probe.example.com/v1/probes/echo", hdr, "")
	var o struct {
		Spec probeEcho `json:"spec"`
	}
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &o); err != nil {
			h.t.Fatalf("echo: %v: %s", err, body)
		}
	}
	return code, o.Spec, body
}

// apiServiceCondition reads the Available condition of the probe's
// APIService in ws: status and reason.
func (h *hubProc) apiServiceCondition(ws string) (string, string, error) {
	out, err := h.kubectl(ws, "get", "apiservice", "v1.probe.example.com", "-o",
		`jsonpath={.status.conditions[?(@.type=="Available")].status}/{.status.conditions[?(@.type=="Available")].reason}`)
	if err != nil {
		return "", "", fmt.Errorf("%v: %s", err, out)
	}
	st, reason, _ := strings.Cut(out, "/")
	return st, reason, nil
}
