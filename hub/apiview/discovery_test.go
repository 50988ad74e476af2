package apiview

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"

	"github.com/wharfhub/wharf/hub/cluster"
)

// catalog is an Enablement: provider p owns group g, enabled in clusters.
type catalog struct {
	ready   bool
	owners  map[string]string
	enabled map[cluster.ID]map[string]bool
}

func (c catalog) Ready() bool { return c.ready }
func (c catalog) ProviderOfGroup(g string) (string, bool) {
	p, ok := c.owners[g]
	return p, ok
}
func (c catalog) Enabled(id cluster.ID, p string) bool { return c.enabled[id][p] }

var testCatalog = catalog{
	ready:   true,
	owners:  map[string]string{"widgets.example.com": "example"},
	enabled: map[cluster.ID]map[string]bool{"bound": {"example": true}},
}

// upstreamDiscovery is the hub's discovery as upstream builds it: the
// legacy /apis list and aggregated discovery, with a built-in group, a
// provider's group and a CRD group of a hub administrator.
func upstreamDiscovery() http.Handler {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(s)
	groups := []string{"rbac.authorization.k8s.io", "widgets.example.com", "admin.example.com"}
	legacy := discovery.NewRootAPIsHandler(discovery.DefaultAddresses{DefaultAddress: "127.0.0.1"}, codecs)
	agg := aggregated.NewResourceManager("apis")
	for _, g := range groups {
		legacy.AddGroup(metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: g + "/v1", Version: "v1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: g + "/v1", Version: "v1"}})
		agg.AddGroupVersion(g, apidiscoveryv2.APIVersionDiscovery{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "things", Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"get"}}}})
	}
	mux := http.NewServeMux()
	mux.Handle("/apis", aggregated.WrapAggregatedDiscoveryToHandler(legacy, agg, nil))
	mux.HandleFunc("/apis/", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"kind":"APIGroup"}`)) })
	return mux
}

func get(t *testing.T, h http.Handler, id cluster.ID, path, accept string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Accept", accept)
	if id != "" {
		r = r.WithContext(cluster.WithCluster(r.Context(), id))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func groupsOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var l struct {
		Groups []struct{ Name string } `json:"groups"`
		Items  []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	var names []string
	for _, g := range l.Groups {
		names = append(names, g.Name)
	}
	for _, g := range l.Items {
		names = append(names, g.Metadata.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

const aggregatedJSON = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func TestDiscoveryPerWorkspace(t *testing.T) {
	h := NewView(testCatalog, "", "rbac.authorization.k8s.io").WithDiscovery(upstreamDiscovery())
	for _, c := range []struct {
		id     cluster.ID
		accept string
		want   string
	}{
		{"bound", "application/json", "admin.example.com,rbac.authorization.k8s.io,widgets.example.com"},
		{"other", "application/json", "admin.example.com,rbac.authorization.k8s.io"},
		{"bound", aggregatedJSON, "admin.example.com,rbac.authorization.k8s.io,widgets.example.com"},
		{"other", aggregatedJSON, "admin.example.com,rbac.authorization.k8s.io"},
	} {
		w := get(t, h, c.id, "/apis", c.accept)
		if w.Code != http.StatusOK || groupsOf(t, w) != c.want {
			t.Errorf("%s %s: %d %s, want %s", c.id, c.accept, w.Code, groupsOf(t, w), c.want)
		}
	}
	for _, p := range []string{"/apis/widgets.example.com", "/apis/widgets.example.com/v1"} {
		if w := get(t, h, "other", p, "application/json"); w.Code != http.StatusNotFound {
			t.Errorf("other %s: %d", p, w.Code)
		}
		if w := get(t, h, "bound", p, "application/json"); w.Code != http.StatusOK {
			t.Errorf("bound %s: %d", p, w.Code)
		}
	}
}

// The entity tag follows the filtered document, so a client holding one
// workspace's discovery never gets 304 for another's.
func TestDiscoveryETagPerWorkspace(t *testing.T) {
	h := NewView(testCatalog, "", "rbac.authorization.k8s.io").WithDiscovery(upstreamDiscovery())
	bound := get(t, h, "bound", "/apis", aggregatedJSON)
	other := get(t, h, "other", "/apis", aggregatedJSON)
	tb, to := bound.Header().Get("Etag"), other.Header().Get("Etag")
	if tb == "" || to == "" || tb == to {
		t.Fatalf("etags: bound %q other %q", tb, to)
	}
	r := httptest.NewRequest(http.MethodGet, "/apis", nil)
	r.Header.Set("Accept", aggregatedJSON)
	r.Header.Set("If-None-Match", tb)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(cluster.WithCluster(r.Context(), "other")))
	if w.Code != http.StatusOK || groupsOf(t, w) != "admin.example.com,rbac.authorization.k8s.io" {
		t.Errorf("other with bound's etag: %d %s", w.Code, w.Body)
	}
	r.Header.Set("If-None-Match", to)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(cluster.WithCluster(r.Context(), "other")))
	if w.Code != http.StatusNotModified {
		t.Errorf("other with its own etag: %d", w.Code)
	}
}

// Until the catalog has loaded, only the hub's own groups are visible.
func TestDiscoveryFailsClosed(t *testing.T) {
	c := testCatalog
	c.ready = false
	h := NewView(c, "", "rbac.authorization.k8s.io").WithDiscovery(upstreamDiscovery())
	if got := groupsOf(t, get(t, h, "bound", "/apis", aggregatedJSON)); got != "rbac.authorization.k8s.io" {
		t.Errorf("before the catalog loaded: %s", got)
	}
	// No cluster in the context (resolution did not happen): nothing of
	// a provider.
	if got := groupsOf(t, get(t, NewView(testCatalog).WithDiscovery(upstreamDiscovery()), "", "/apis", "application/json")); strings.Contains(got, "widgets") {
		t.Errorf("without a cluster: %s", got)
	}
}
