package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue 12 item 5: a workspace's OpenAPI holds the built-in groups,
// apiextensions.k8s.io and the CRDs served there, so kubectl explain works
// for custom resources as on kube-apiserver.

// openAPIIndex returns the group-versions of an OpenAPI v3 index and the
// URL each points to.
func openAPIIndex(t *testing.T, a fidAnswer) map[string]string {
	t.Helper()
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if a.Code != http.StatusOK {
		t.Fatalf("/openapi/v3: %s", a)
	}
	if err := json.Unmarshal([]byte(a.Body), &idx); err != nil {
		t.Fatalf("/openapi/v3: %v: %s", err, truncate(a.Body, 300))
	}
	out := map[string]string{}
	for gv, p := range idx.Paths {
		out[gv] = p.ServerRelativeURL
	}
	return out
}

// fidCRD is a namespaced CRD in a group of its own, so that both sides
// can hold it whatever other checks apply.
func fidCRD(group string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
spec:
  group: %[1]s
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A Gadget is a test object.
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              size: {type: integer, description: How large it is.}
              color: {type: string, description: Its colour.}
`, group)
}

func init() {
	registerFidelity("05-openapi/unknown-group-version", func(t *testing.T, f *fidelity) {
		hub, kube := f.Same(t, fidReq{Path: "/openapi/v3/apis/nope.example.com/v1"})
		if hub.Code != http.StatusNotFound || hub.Body != kube.Body {
			t.Errorf("hub: %s, kube: %s", hub, kube)
		}
	})
	registerFidelity("05-openapi/v3-index-builtins", func(t *testing.T, f *fidelity) {
		hub, kube := f.Both(t, fidReq{Path: "/openapi/v3"})
		h, k := openAPIIndex(t, hub), openAPIIndex(t, kube)
		for _, gv := range []string{"api/v1", "apis/rbac.authorization.k8s.io/v1", "apis/coordination.k8s.io/v1",
			"apis/authorization.k8s.io/v1", "apis/authentication.k8s.io/v1", "apis/apiextensions.k8s.io/v1"} {
			if k[gv] == "" {
				t.Errorf("kube's index lacks %s", gv)
			}
		}
		// Every key of kube's index for a group the hub serves (the hub
		// serves fewer groups: see README) is in the hub's too.
		served := map[string]bool{"": true, "rbac.authorization.k8s.io": true, "coordination.k8s.io": true,
			"authorization.k8s.io": true, "authentication.k8s.io": true, "apiextensions.k8s.io": true}
		for gv := range k {
			// Only the API documents: the hub is no service-account
			// issuer (openid/v1/jwks, .well-known/openid-configuration).
			parts := strings.Split(gv, "/")
			group := "-"
			switch {
			case parts[0] == "api" || parts[0] == "version" || gv == "apis":
				group = ""
			case parts[0] == "apis":
				group = parts[1]
			}
			if served[group] && h[gv] == "" {
				t.Errorf("hub's index lacks %s", gv)
			}
		}
		// Every URL of the index leads back to this workspace and serves
		// its document (client-go resolves them against the host only).
		for gv, u := range h {
			if !strings.HasPrefix(u, "/clusters/"+f.WS+"/openapi/v3/"+gv+"?hash=") {
				t.Errorf("%s: %q does not lead to the workspace", gv, u)
				continue
			}
			a := f.send(t, f.Hub.client(), f.Hub.URL, f.Hub.Token, fidReq{Path: u})
			if a.Code != http.StatusOK || !strings.Contains(a.Body, `"openapi"`) {
				t.Errorf("%s: %s", u, a)
			}
		}
	})
	registerFidelity("05-openapi/explain-crd", func(t *testing.T, f *fidelity) {
		group := f.unique("openapi") + ".example.com"
		f.MustBoth(t, fidCRD(group))
		for _, args := range [][]string{
			{"explain", "gadgets." + group},
			{"explain", "gadgets." + group + ".spec"},
			{"explain", "gadgets." + group + ".spec.size"},
		} {
			var hub, kube string
			eventually(t, 60*time.Second, func() error {
				var he, ke error
				hub, kube, he, ke = f.BothKubectl("", args...)
				if he != nil || ke != nil {
					return fmt.Errorf("hub: %v %s\nkube: %v %s", he, hub, ke, kube)
				}
				return nil
			})
			if hub != kube {
				t.Errorf("kubectl %s:\n  hub:\n%s\n  kube:\n%s", strings.Join(args, " "), hub, kube)
			}
		}
		// The same definition in OpenAPI v2 and the group-version in v3.
		def := `"com.example.` + strings.TrimSuffix(group, ".example.com") + `.v1.Gadget"`
		hub, kube := f.Both(t, fidReq{Path: "/openapi/v2"})
		if !strings.Contains(kube.Body, def) {
			t.Errorf("kube's /openapi/v2 lacks %s", def)
		}
		if hub.Code != http.StatusOK || !strings.Contains(hub.Body, def) {
			t.Errorf("hub's /openapi/v2 lacks %s (%d)", def, hub.Code)
		}
		hubV3, kubeV3 := f.Same(t, fidReq{Path: "/openapi/v3/apis/" + group + "/v1"})
		if !strings.Contains(hubV3.Body, "How large it is.") || !strings.Contains(kubeV3.Body, "How large it is.") {
			t.Errorf("v3 of %s: hub %s, kube %s", group, hubV3, kubeV3)
		}
	})
}
