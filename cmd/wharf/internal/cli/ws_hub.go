package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/rest"
)

// whoAmI is the part of the hub's GET /api/whoami answer the ws commands
// read (hub/home.WhoAmI; not imported, so the CLI stays free of the hub's
// server code).
type whoAmI struct {
	User       string   `json:"user"`
	Home       *wsName  `json:"home,omitempty"`
	Workspaces []wsName `json:"workspaces"`
	Truncated  bool     `json:"truncated,omitempty"`
	byID       map[string]string
	byPath     map[string]string
}

// wsName names a workspace both ways.
type wsName struct {
	Path    string `json:"path"`
	Cluster string `json:"cluster"`
}

// pathOf is the path of the accessible workspace whose id is id.
func (w *whoAmI) pathOf(id string) (string, bool) {
	p, ok := w.byID[id]
	return p, ok
}

// has reports whether the caller may access path, as far as the (possibly
// truncated) list says.
func (w *whoAmI) has(path string) bool {
	_, ok := w.byPath[path]
	return ok
}

// whoami asks the hub root who the caller is and which workspaces it may
// access (verb "access" on "/" in each, the check the hub itself makes).
func (c *hubConn) whoami(ctx context.Context) (*whoAmI, error) {
	body, code, err := c.getRoot(ctx, "/api/whoami")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("asking the hub who you are: %w", fromServer(statusFromResponse(code, body)))
	}
	w := &whoAmI{}
	if err := json.Unmarshal(body, w); err != nil {
		return nil, fmt.Errorf("decoding the hub's /api/whoami answer: %w", err)
	}
	w.byID, w.byPath = map[string]string{}, map[string]string{}
	for _, ws := range w.Workspaces {
		w.byID[ws.Cluster], w.byPath[ws.Path] = ws.Path, ws.Cluster
	}
	return w, nil
}

// checkAccess asks the workspace itself whether the caller may use it: its
// discovery (/clusters/<ws>/api) needs exactly the visibility the hub
// grants, so a 200 means kubectl will work there. 403 and 404 both become
// errNoWorkspace; the hub words them alike for this reason.
func (c *hubConn) checkAccess(ctx context.Context, ws string) error {
	body, code, err := c.getRoot(ctx, "/clusters/"+ws+"/api")
	if err != nil {
		return err
	}
	switch code {
	case http.StatusOK:
		return nil
	case http.StatusForbidden, http.StatusNotFound:
		return &errNoWorkspace{name: ws}
	default:
		return fmt.Errorf("checking workspace %q: %w", ws, fromServer(statusFromResponse(code, body)))
	}
}

// getRoot GETs path on the hub root with the caller's credentials.
func (c *hubConn) getRoot(ctx context.Context, path string) ([]byte, int, error) {
	rc, err := c.rootConfig()
	if err != nil {
		return nil, 0, err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, 0, fmt.Errorf("building the hub client: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Host+path, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("reaching the hub: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the hub's answer: %w", err)
	}
	return b, resp.StatusCode, nil
}
