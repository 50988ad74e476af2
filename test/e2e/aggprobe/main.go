// Command aggprobe is the end-to-end tests' provider for the hub's
// per-workspace aggregation (hub/aggregation). It serves a tiny
// probe.example.com/v1 API (one cluster-scoped Probe, "echo", whose spec
// echoes the identity headers of the request) to aggregated requests
// only: without sdk.HeaderOriginalPath it answers 404, as a provider must.
//
// POST /register, on the backend route, creates its APIService in the
// caller's workspace with the provider's own credentials (?protected=1
// adds the wharf.dev/protected label naming itself); DELETE /register
// deletes it. GET /log lists every request that reached /apis, so a test
// can show a request the hub refused never arrived.
//
// Its provider name is its executable's name without "wharf-provider-",
// so a test can load it as another provider (resource-proxy, to exercise
// the protection label); a name ending in "-single" runs replicas: single.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/clusters"
)

const (
	group   = "probe.example.com"
	version = "v1"
)

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

type probe struct {
	name    string
	cfg     *rest.Config
	failing atomic.Bool

	mu  sync.Mutex
	log []logged
}

type logged struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Headers http.Header `json:"headers"`
}

func (p *probe) Start(_ context.Context, hc sdk.HubConfig) error {
	p.cfg = hc.RestConfig
	return nil
}

func (p *probe) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/", p.serveAPI)
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, _ *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		writeJSON(w, http.StatusOK, p.log)
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		p.register(w, r, true)
	})
	// /fail and /recover make discovery answer 503 or not: a provider
	// that runs but fails its discovery check.
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, _ *http.Request) {
		p.failing.Store(true)
		writeJSON(w, http.StatusOK, map[string]string{"result": "failing"})
	})
	mux.HandleFunc("POST /recover", func(w http.ResponseWriter, _ *http.Request) {
		p.failing.Store(false)
		writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
	})
	mux.HandleFunc("GET /impersonate", p.impersonate)
	mux.HandleFunc("DELETE /register", func(w http.ResponseWriter, r *http.Request) {
		p.register(w, r, false)
	})
	replicas := sdk.ReplicasAny
	if strings.HasSuffix(p.name, "-single") {
		replicas = sdk.ReplicasSingle
	}
	return sdk.Manifest{
		Name: p.name, Version: "v0.0.1", Description: "Aggregation test provider.",
		Backend: mux, Replicas: replicas,
	}
}

// register creates or deletes the APIService in the caller's workspace as
// the provider itself.
func (p *probe) register(w http.ResponseWriter, r *http.Request, create bool) {
	id, ok := sdk.IdentityFrom(r)
	if !ok || id.Tenant == "" {
		http.Error(w, "no workspace", http.StatusForbidden)
		return
	}
	ws := id.Tenant
	if v := r.URL.Query().Get("ws"); v != "" {
		// Tests: try a workspace other than the caller's.
		ws = v
	}
	cfg, err := clusters.ForCluster(p.cfg, ws)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	res := c.Resource(apiServicesGVR)
	g := group
	if v := r.URL.Query().Get("group"); v != "" {
		g = v // tests: another group than the one served
	}
	name := version + "." + g
	if !create {
		err = res.Delete(r.Context(), name, metav1.DeleteOptions{})
		answer(w, err)
		return
	}
	service := p.name
	if v := r.URL.Query().Get("service"); v != "" {
		// Tests: try to point the APIService at another provider.
		service = v
	}
	labels := map[string]any{}
	if r.URL.Query().Get("protected") == "1" {
		labels["wharf.dev/protected"] = p.name
	}
	if v := r.URL.Query().Get("label"); v != "" {
		labels["wharf.dev/protected"] = v // tests: another provider's label
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{
			"group": g, "version": version, "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "wharf-providers", "name": service},
		},
	}}
	_, err = res.Create(r.Context(), obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	answer(w, err)
}

// impersonate lists namespaces in ?ws= with the provider's credentials
// impersonating ?user= (and ?group=, if any), and reports the hub's
// answer: what the provider authorizer lets a provider impersonate.
func (p *probe) impersonate(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cfg, err := clusters.ForCluster(p.cfg, q.Get("ws"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: q.Get("user")}
	if g := q.Get("group"); g != "" {
		cfg.Impersonate.Groups = []string{g}
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, err = c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(r.Context(), metav1.ListOptions{})
	out := map[string]any{"code": 200, "message": ""}
	if s, ok := err.(apierrors.APIStatus); ok {
		out["code"], out["message"] = s.Status().Code, s.Status().Message
	} else if err != nil {
		out["code"], out["message"] = 0, err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

func answer(w http.ResponseWriter, err error) {
	if err != nil {
		code := http.StatusInternalServerError
		if s, ok := err.(apierrors.APIStatus); ok {
			code = int(s.Status().Code)
		}
		http.Error(w, err.Error(), code)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
}

// serveAPI is the aggregated API. Requests without the original path did
// not come through the hub's aggregation route: 404, like a path nobody
// serves.
func (p *probe) serveAPI(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.log = append(p.log, logged{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Headers: r.Header.Clone()})
	p.mu.Unlock()
	if r.Header.Get(sdk.HeaderOriginalPath) == "" {
		status(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	base := "/apis/" + group + "/" + version
	switch rest := strings.TrimPrefix(r.URL.Path, base); {
	case r.URL.Path == "/apis/"+group || r.URL.Path == "/apis/"+group+"/":
		writeJSON(w, http.StatusOK, metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group,
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: group + "/" + version, Version: version}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + version, Version: version},
		})
	case !strings.HasPrefix(r.URL.Path, base):
		status(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	case (rest == "" || rest == "/") && p.failing.Load():
		status(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "failing on purpose")
	case rest == "" || rest == "/":
		writeJSON(w, http.StatusOK, metav1.APIResourceList{
			TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: group + "/" + version,
			APIResources: []metav1.APIResource{{Name: "probes", SingularName: "probe", Kind: "Probe", Verbs: []string{"get", "list"}}},
		})
	case rest == "/probes" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"apiVersion": group + "/" + version, "kind": "ProbeList", "metadata": map[string]any{"resourceVersion": "1"},
			"items": []any{p.echo(r)},
		})
	case rest == "/probes/echo" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, p.echo(r))
	case strings.HasPrefix(rest, "/probes/") && r.Method == http.MethodGet:
		status(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("probes.%s %q not found", group, strings.TrimPrefix(rest, "/probes/")))
	default:
		status(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "only get and list are served")
	}
}

// echo is the one Probe: its spec is what the hub asserted.
func (p *probe) echo(r *http.Request) map[string]any {
	id, _ := sdk.IdentityFrom(r)
	return map[string]any{
		"apiVersion": group + "/" + version, "kind": "Probe",
		"metadata": map[string]any{"name": "echo", "creationTimestamp": "2026-01-01T00:00:00Z"},
		"spec": map[string]any{
			"user": id.User, "groups": id.Groups, "tenant": id.Tenant, "cluster": id.Cluster,
			"originalPath": r.Header.Get(sdk.HeaderOriginalPath), "provider": p.name,
			"authorization": r.Header.Get("Authorization") != "", "pid": os.Getpid(),
		},
	}
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: msg,
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "wharf-provider-")
	sdk.Serve(&probe{name: name})
}
