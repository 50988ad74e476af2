package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue 12 item 12: discovery (legacy and aggregated) and OpenAPI list a
// provider's group only in workspaces whose ProviderBinding enables it,
// and CRDs a hub administrator created everywhere. The kube side cannot
// run this (it has no providers), so these are hub-only checks of what
// kube-apiserver does for a group it does not serve: absent from /apis,
// 404 at /apis/<g> and /apis/<g>/<v>, absent from api-resources and
// OpenAPI.

const (
	exampleGroup = "example.wharf.dev"
	aggregatedV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)

// onWorkspace sends r to workspace ws of the hub as the admin.
func (f *fidelity) onWorkspace(t *testing.T, ws string, r fidReq) fidAnswer {
	t.Helper()
	return f.send(t, f.Hub.client(), f.Hub.URL+"/clusters/"+ws, f.Hub.Token, r)
}

// discoveryGroups returns the group names of /apis in the legacy and the
// aggregated form.
func (f *fidelity) discoveryGroups(t *testing.T, ws string) (legacy, aggregated map[string]bool) {
	t.Helper()
	var l struct {
		Groups []struct{ Name string } `json:"groups"`
	}
	var a struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	ans := f.onWorkspace(t, ws, fidReq{Path: "/apis"})
	if err := json.Unmarshal([]byte(ans.Body), &l); ans.Code != http.StatusOK || err != nil {
		t.Fatalf("%s /apis: %s %v", ws, ans, err)
	}
	ans = f.onWorkspace(t, ws, fidReq{Path: "/apis", Accept: aggregatedV2})
	if err := json.Unmarshal([]byte(ans.Body), &a); ans.Code != http.StatusOK || err != nil || a.Kind != "APIGroupDiscoveryList" {
		t.Fatalf("%s aggregated /apis: %s %v", ws, ans, err)
	}
	legacy, aggregated = map[string]bool{}, map[string]bool{}
	for _, g := range l.Groups {
		legacy[g.Name] = true
	}
	for _, g := range a.Items {
		aggregated[g.Metadata.Name] = true
	}
	return legacy, aggregated
}

// wsKubectl runs kubectl as the admin against workspace ws with a cache
// of its own.
func (f *fidelity) wsKubectl(ws string, args ...string) (string, error) {
	full := append([]string{"--kubeconfig", f.Hub.Kubecfg, "--server", f.Hub.URL + "/clusters/" + ws}, args...)
	return f.runKubectl(f.Hub.opts.dataDir+"/kubecache-admin-"+ws, full)
}

// exposure says where group shows up in workspace ws.
func (f *fidelity) exposure(t *testing.T, ws, group, gv, resource string) []string {
	t.Helper()
	var seen []string
	legacy, aggregated := f.discoveryGroups(t, ws)
	if legacy[group] {
		seen = append(seen, "legacy /apis")
	}
	if aggregated[group] {
		seen = append(seen, "aggregated /apis")
	}
	for _, p := range []string{"/apis/" + group, "/apis/" + gv} {
		if a := f.onWorkspace(t, ws, fidReq{Path: p}); a.Code != http.StatusNotFound {
			seen = append(seen, fmt.Sprintf("%s answers %d", p, a.Code))
		}
	}
	if out, err := f.wsKubectl(ws, "api-resources", "--api-group", group, "-o", "name"); err != nil {
		t.Fatalf("%s: kubectl api-resources: %v %s", ws, err, out)
	} else if strings.Contains(out, resource) {
		seen = append(seen, "kubectl api-resources")
	}
	idx := openAPIIndex(t, f.onWorkspace(t, ws, fidReq{Path: "/openapi/v3"}))
	if idx["apis/"+gv] != "" {
		seen = append(seen, "/openapi/v3 index")
	}
	if a := f.onWorkspace(t, ws, fidReq{Path: "/openapi/v3/apis/" + gv}); a.Code != http.StatusNotFound {
		seen = append(seen, fmt.Sprintf("/openapi/v3/apis/%s answers %d", gv, a.Code))
	}
	if a := f.onWorkspace(t, ws, fidReq{Path: "/openapi/v2"}); strings.Contains(a.Body, `"/apis/`+gv+`/`) {
		seen = append(seen, "/openapi/v2")
	}
	return seen
}

func init() {
	registerFidelity("12-discovery/provider-only-where-bound", func(t *testing.T, f *fidelity) {
		bound, unbound := "root:"+f.unique("d"), "root:"+f.unique("d")
		f.Hub.createWorkspace("root", strings.TrimPrefix(bound, "root:"))
		f.Hub.createWorkspace("root", strings.TrimPrefix(unbound, "root:"))
		f.Hub.mustApply(bound, "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: example\nspec:\n  provider: example\n", "create")
		gv := exampleGroup + "/v1alpha1"
		everywhere := []string{"legacy /apis", "aggregated /apis", "/apis/" + exampleGroup + " answers 200", "/apis/" + gv + " answers 200",
			"kubectl api-resources", "/openapi/v3 index", "/openapi/v3/apis/" + gv + " answers 200", "/openapi/v2"}
		eventually(t, 60*time.Second, func() error {
			if got := f.exposure(t, bound, exampleGroup, gv, "widgets"); strings.Join(got, ",") != strings.Join(everywhere, ",") {
				return fmt.Errorf("bound workspace shows the provider in %v, want %v", got, everywhere)
			}
			return nil
		})
		// A hidden group answers as kube-apiserver does for a group it
		// does not serve.
		for _, p := range []string{"/apis/" + exampleGroup, "/apis/" + gv, "/openapi/v3/apis/" + gv} {
			hub := f.onWorkspace(t, unbound, fidReq{Path: p})
			kube := f.OnKube(t, fidReq{Path: p})
			if hub.Code != kube.Code || hub.Body != kube.Body {
				t.Errorf("%s in %s: hub %s, kube %s", p, unbound, hub, kube)
			}
		}
		if got := f.exposure(t, unbound, exampleGroup, gv, "widgets"); len(got) != 0 {
			t.Errorf("workspace without a binding shows the provider's group in %v", got)
		}
		if got := f.exposure(t, f.WS, exampleGroup, gv, "widgets"); len(got) != 0 {
			t.Errorf("%s shows the provider's group in %v", f.WS, got)
		}
		// Aggregated discovery differs, so its entity tags must too: a
		// client's cache of one workspace never stands for another's.
		a := f.onWorkspace(t, bound, fidReq{Path: "/apis", Accept: aggregatedV2})
		b := f.onWorkspace(t, unbound, fidReq{Path: "/apis", Accept: aggregatedV2})
		if a.Body == b.Body {
			t.Errorf("aggregated discovery of %s and %s is the same", bound, unbound)
		}
	})
	registerFidelity("12-discovery/admin-crd-everywhere", func(t *testing.T, f *fidelity) {
		ws := "root:" + f.unique("d")
		f.Hub.createWorkspace("root", strings.TrimPrefix(ws, "root:"))
		group := f.unique("disc") + ".example.com"
		f.Hub.mustApply("root", fidCRD(group), "create")
		gv := group + "/v1"
		all := []string{"legacy /apis", "aggregated /apis", "/apis/" + group + " answers 200", "/apis/" + gv + " answers 200",
			"kubectl api-resources", "/openapi/v3 index", "/openapi/v3/apis/" + gv + " answers 200", "/openapi/v2"}
		for _, w := range []string{ws, f.WS} {
			eventually(t, 60*time.Second, func() error {
				if got := f.exposure(t, w, group, gv, "gadgets"); strings.Join(got, ",") != strings.Join(all, ",") {
					return fmt.Errorf("%s shows the CRD in %v, want %v", w, got, all)
				}
				return nil
			})
		}
	})
}
