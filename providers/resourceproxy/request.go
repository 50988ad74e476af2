package resourceproxy

import (
	"net/http"
	"strings"
)

// apiRequest is what the proxy needs to know about an aggregated request:
// /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<sub>]].
type apiRequest struct {
	Group, Version string
	// Discovery is /apis/<group> (Version "") or /apis/<group>/<version>.
	Discovery bool
	Namespace string
	Resource  string
	Name      string
	Sub       string
	Verb      string
	Watch     bool
}

// parseRequest reads r's path (the provider backend path, /apis/...).
// ok is false for anything else.
func parseRequest(r *http.Request) (req apiRequest, ok bool) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) < 2 || parts[0] != "apis" || parts[1] == "" {
		return req, false
	}
	for _, s := range parts {
		if s == "" || s == "." || s == ".." {
			return req, false
		}
	}
	req.Group = parts[1]
	if len(parts) == 2 {
		req.Discovery = true
		return req, true
	}
	req.Version = parts[2]
	rest := parts[3:]
	if len(rest) == 0 {
		req.Discovery = true
		return req, true
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		req.Namespace, rest = rest[1], rest[2:]
	}
	req.Resource = rest[0]
	if len(rest) > 1 {
		req.Name = rest[1]
	}
	if len(rest) > 2 {
		req.Sub = strings.Join(rest[2:], "/")
	}
	q := r.URL.Query()
	req.Watch = q.Get("watch") == "true" || q.Get("watch") == "1"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case req.Watch:
			req.Verb = "watch"
		case req.Name == "":
			req.Verb = "list"
		default:
			req.Verb = "get"
		}
	case http.MethodPost:
		req.Verb = "create"
	case http.MethodPut:
		req.Verb = "update"
	case http.MethodPatch:
		req.Verb = "patch"
	case http.MethodDelete:
		if req.Name == "" {
			req.Verb = "deletecollection"
		} else {
			req.Verb = "delete"
		}
	default:
		req.Verb = strings.ToLower(r.Method)
	}
	return req, true
}

// isUpgrade reports a connection upgrade (exec, attach, port-forward,
// websockets, SPDY).
func isUpgrade(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return true
	}
	for _, v := range r.Header.Values("Connection") {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}
