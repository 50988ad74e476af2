// Command exampleprovider is the smallest useful Wharf provider, used by the
// sdk tests as a real plugin process. Its /whoami endpoint echoes the
// identity headers: that endpoint alone exercises the whole contract.
//
// Test-only knobs: WHARF_EXAMPLE_CRASH=early exits before the handshake;
// provider config "crash: start" exits inside the Start hook; "child: true"
// spawns a sleeping child and "keepChild: true" leaves it running at Stop, so
// tests can check the hub's process-group kill.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/sdk"
)

//go:embed ui
var uiFS embed.FS

type config struct {
	Greeting string `json:"greeting"`
	Crash    string `json:"crash"`
	Child    bool   `json:"child"`
	// KeepChild leaves the child running at Stop, so only the hub's
	// process-group kill can end it.
	KeepChild bool `json:"keepChild"`
}

type provider struct {
	mu       sync.Mutex
	hc       sdk.HubConfig
	cfg      config
	childPID int
	child    *exec.Cmd
}

// Interface guards: the optional hooks are what this example demonstrates.
var (
	_ sdk.Provider      = (*provider)(nil)
	_ sdk.Starter       = (*provider)(nil)
	_ sdk.Stopper       = (*provider)(nil)
	_ sdk.HealthChecker = (*provider)(nil)
)

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.wharf.dev
spec:
  group: example.wharf.dev
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func (p *provider) Manifest() sdk.Manifest {
	ui, err := fs.Sub(uiFS, "ui")
	if err != nil {
		panic(err) // embedded at build time; cannot fail at run time
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sdk.IdentityFrom(r)
		writeJSON(w, map[string]any{"identity": id, "authenticated": ok,
			"authorization": r.Header.Get("Authorization")})
	})
	// Reads the whole body before answering, as a provider that proxies
	// or stores uploads does: a slow body keeps the request in flight
	// (the fairness rows of the attack table).
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		writeJSON(w, map[string]any{"bytes": n, "error": fmt.Sprint(err)})
	})
	mux.HandleFunc("GET /public/ping", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sdk.IdentityFrom(r)
		writeJSON(w, map[string]any{"identity": id, "authenticated": ok})
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		out := map[string]any{"hubURL": p.hc.HubURL, "dataDir": p.hc.DataDir,
			"greeting": p.cfg.Greeting, "childPID": p.childPID, "pid": os.Getpid(),
			"env": os.Getenv("WHARF_EXAMPLE_ENV"), "path": os.Getenv("PATH")}
		if p.hc.RestConfig != nil {
			out["restHost"] = p.hc.RestConfig.Host
			out["restToken"] = p.hc.RestConfig.BearerToken
		}
		writeJSON(w, out)
	})
	// GET /hub?path=/clusters/<ws>/... calls the hub as the provider itself
	// (HubConfig.RestConfig) and reports the status code: tests use it to
	// check how the hub scopes provider credentials.
	mux.HandleFunc("GET /hub", p.hubGet)
	return sdk.Manifest{
		Name:        "example",
		DisplayName: "Example",
		Version:     "v0.0.1",
		Description: "Echoes who you are.",
		Icon:        "icon.svg",
		Category:    "testing",
		UI:          ui,
		Backend:     mux,
		CRDs:        [][]byte{[]byte(crd)},
		Replicas:    sdk.ReplicasSingle,
		PublicPaths: []string{"/public/"},
		// Lets tests see the edge proxy grant a binding creates.
		EdgeProxyAccess: true,
	}
}

func (p *provider) hubGet(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	rc := p.hc.RestConfig
	p.mu.Unlock()
	if rc == nil {
		http.Error(w, "no hub credentials", http.StatusServiceUnavailable)
		return
	}
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimSuffix(rc.Host, "/")+r.URL.Query().Get("path"), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	writeJSON(w, map[string]any{"code": resp.StatusCode, "body": string(body)})
}

func (p *provider) Start(ctx context.Context, hc sdk.HubConfig) error {
	var cfg config
	if err := hc.DecodeConfig(&cfg); err != nil {
		return err
	}
	if cfg.Crash == "start" {
		os.Exit(4)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hc, p.cfg = hc, cfg
	if cfg.Child {
		// Not CommandContext: the child must outlive ctx to prove the hub's
		// process-group kill reaches it.
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			return fmt.Errorf("start child: %w", err)
		}
		p.child, p.childPID = c, c.Process.Pid
	}
	return nil
}

func (p *provider) Stop(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.child != nil && !p.cfg.KeepChild {
		_ = p.child.Process.Kill()
		_ = p.child.Wait()
		p.child = nil
	}
	return nil
}

func (p *provider) Healthy(context.Context) error { return nil }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	if os.Getenv("WHARF_EXAMPLE_CRASH") == "early" {
		fmt.Fprintln(os.Stderr, "exampleprovider: crashing early on purpose")
		os.Exit(3)
	}
	sdk.Serve(&provider{})
}
