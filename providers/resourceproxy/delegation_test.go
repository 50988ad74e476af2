package resourceproxy

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/sdk"
)

// TestDelegationOnlyToTheHub (sixth outside review, W10): every request
// the proxy makes to serve a routed request (the ownership GET, the
// namespace create, the request itself) carries that request's
// delegation when the target is a workspace on the hub, which serves them
// on the routed request's seats; none carries it to an external cluster,
// nor one the hub did not send.
func TestDelegationOnlyToTheHub(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // target → the delegations it got
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "endpointslices") {
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
			return
		}
		target := "external"
		if strings.HasPrefix(r.URL.Path, "/clusters/") {
			target = "workspace"
		}
		mu.Lock()
		seen[target] = append(seen[target], r.Method+" "+r.Header.Get(sdk.HeaderDelegation))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"kind":"Thing","metadata":{"name":"x"}}`))
		case strings.HasSuffix(r.URL.Path, "/things/x"):
			_, _ = w.Write([]byte(`{"kind":"Thing","metadata":{"name":"x","labels":{"` + OwnerClusterLabel + `":"c1","` + OwnerWorkspaceLabel + `":"a"}}}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"ThingList","items":[]}`))
		}
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	hub := &rest.Config{Host: srv.URL, BearerToken: "not-a-secret", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	clk := clocktesting.NewFakeClock(time.Now())
	m := NewMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	routes := NewRoutes()
	routes.Set("c1", map[string]*Route{
		"g.example.com/v1": {Cluster: "c1", Group: "g.example.com", Version: "v1", Mode: AccessOwned, Resources: []string{"things"},
			Target: Target{Workspace: "root:b"}},
		"e.example.com/v1": {Cluster: "c1", Group: "e.example.com", Version: "v1", Mode: AccessOwned, Resources: []string{"things"},
			Target: Target{External: &External{Name: "t1", SecretRef: SecretRef{Namespace: "ops", Name: "kc"}}}},
	})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["t"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "not-a-secret"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "u"}
	kc.CurrentContext = "c"
	kcb, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(routes, NewTargets(ctx, hub, oneSecret(kcb), clk, m, loopbackPolicy(t)), allNamespaces{}, m, clk)

	for _, tok := range []string{"tok-1", ""} {
		for _, group := range []string{"g.example.com", "e.example.com"} {
			base := "/apis/" + group + "/v1/namespaces/ns/things"
			for _, rq := range []struct{ method, path, body string }{
				{http.MethodGet, base, ""},
				{http.MethodPost, base, `{"apiVersion":"` + group + `/v1","kind":"Thing","metadata":{"name":"x"}}`},
				{http.MethodPatch, base + "/x", `{"spec":{}}`},
			} {
				r := aggregated(rq.method, rq.path)
				if rq.body != "" {
					r.Body = httptest.NewRequest(rq.method, rq.path, strings.NewReader(rq.body)).Body
					r.Header.Set("Content-Type", "application/merge-patch+json")
					if rq.method == http.MethodPost {
						r.Header.Set("Content-Type", "application/json")
					}
				}
				if tok != "" {
					r.Header.Set(sdk.HeaderDelegation, tok)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if rec.Code >= 300 {
					t.Fatalf("%s %s: %d %s", rq.method, rq.path, rec.Code, rec.Body)
				}
			}
		}
		mu.Lock()
		ws, ext := seen["workspace"], seen["external"]
		seen = map[string][]string{}
		mu.Unlock()
		// list; namespace create (the first time only), create;
		// ownership GET, patch.
		want := 4
		if tok != "" {
			want = 5
		}
		if len(ws) != want || len(ext) != want {
			t.Fatalf("requests to the targets: workspace %v, external %v", ws, ext)
		}
		for _, s := range ws {
			if !strings.HasSuffix(s, " "+tok) {
				t.Errorf("to the workspace target, with %q sent: %q", tok, s)
			}
		}
		for _, s := range ext {
			if !strings.HasSuffix(s, " ") {
				t.Errorf("to the external target: %q", s)
			}
		}
	}
}
