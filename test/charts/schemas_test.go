package charts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/openapi"
	"github.com/wharfhub/wharf/providers/edges"
	"github.com/wharfhub/wharf/providers/resourceproxy"
	"github.com/wharfhub/wharf/test/kube"
)

// generateSchemas writes kubeconform schemas for every built-in kind, the
// providers' CRDs, ServiceMonitor and the hub's own kinds into a temp dir
// and returns it. See doc.go for the sources.
func generateSchemas(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := kube.Start(t, kube.Options{})

	// The CRDs exactly as the providers hand them to the hub (edges as
	// manifest YAML, resource-proxy as an object).
	crds := []string{mustRead(t, filepath.Join("testdata", "servicemonitor-crd.yaml"))}
	rp, err := json.Marshal(resourceproxy.CRD())
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range append(edges.New(edges.Options{}).Manifest().CRDs, rp) {
		crds = append(crds, string(raw))
	}
	c.ApplyYAML(t, strings.Join(crds, "\n---\n"))

	// kube-apiserver publishes a CRD's schema in /openapi/v2 a moment
	// after it is Established: poll until every one is there.
	want := []string{"com.coreos.monitoring.v1.ServiceMonitor", "dev.wharf.edges.v1alpha1.Edge", "dev.wharf.proxy.v1alpha1.ResourceProxy"}
	var defs map[string]any
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := openAPIv2(ctx, c.Config())
		if err != nil {
			t.Logf("GET /openapi/v2: %v", err)
			return false, nil
		}
		for _, w := range want {
			if d[w] == nil {
				t.Logf("/openapi/v2 has %d definitions, not yet %s", len(d), w)
				return false, nil
			}
		}
		defs = d
		return true, nil
	})
	if err != nil {
		t.Fatalf("the fixture's /openapi/v2 never listed %v: %v", want, err)
	}
	gvks, err := Write(dir, defs)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := Write(dir, hubDefinitions(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(hub) == 0 {
		t.Fatal("no schema written for the hub's own kinds")
	}
	t.Logf("schemas: %d kinds from the kube-apiserver fixture, %d from hub/openapi", len(gvks), len(hub))
	return dir
}

func openAPIv2(ctx context.Context, cfg *rest.Config) (map[string]any, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/openapi/v2", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi/v2: %s", resp.Status)
	}
	var doc struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding /openapi/v2: %w", err)
	}
	return doc.Definitions, nil
}

// hubDefinitions are hub/openapi's definitions in OpenAPI v2 form, with
// x-kubernetes-group-version-kind set from the hub's scheme for the kinds
// of the hub's own groups (the generated code does not carry it; the
// apiserver adds it when it serves /openapi/v2).
func hubDefinitions(t *testing.T) map[string]any {
	t.Helper()
	gen := openapi.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef(ref(path)) })
	kinds := map[string][]GVK{}
	for gvk, typ := range scheme.New().AllKnownTypes() {
		// Only the hub's own types: every group also registers meta/v1's
		// option and watch types.
		if strings.HasSuffix(gvk.Group, ".wharf.dev") && strings.HasPrefix(typ.PkgPath(), "github.com/wharfhub/wharf/") {
			// The generated code names models by OpenAPIModelName.
			named, ok := reflect.New(typ).Interface().(interface{ OpenAPIModelName() string })
			if !ok {
				t.Fatalf("%s has no OpenAPIModelName (make generate)", typ)
			}
			name := named.OpenAPIModelName()
			kinds[name] = append(kinds[name], GVK{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind})
		}
	}
	out := map[string]any{}
	for name, d := range gen {
		m := toMap(t, d)
		if g, ok := kinds[name]; ok {
			m["x-kubernetes-group-version-kind"] = g
		}
		out[name] = m
	}
	for name := range kinds {
		if out[name] == nil {
			t.Fatalf("hub/openapi has no definition for %s (make generate)", name)
		}
	}
	return out
}

func toMap(t *testing.T, d common.OpenAPIDefinition) map[string]any {
	raw, err := json.Marshal(d.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	// Write reads the GVK list back through JSON; keep it a plain value.
	return m
}

func mustRead(t testing.TB, p string) string {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// yamlDocs splits a rendered stream into its objects (comments and empty
// documents dropped).
func yamlDocs(t testing.TB, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(stream, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
	return out
}
