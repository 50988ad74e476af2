// Command portalprobe is a hostile provider for the portal's browser tests
// (test/e2e/portal): its UI script runs in the portal's origin and tries
// every way a malicious provider would to steal the person's credentials,
// then writes what it found into the page for the test to read.
//
// One binary serves two providers, named by the executable's name
// (wharf-provider-<name>), since the hub requires the manifest name to
// match the configured one:
//
//   - portalprobe: main.js defines <wharf-provider-portalprobe>, wraps
//     fetch, XMLHttpRequest and Headers before the shell calls it, reads
//     document.cookie, local and session storage, every window global,
//     the page's DOM, /auth/session as a page script, and the context and
//     api the shell hands it, and reports them in
//     [data-testid=probe-report] as JSON.
//   - portalnodefine: main.js loads and never calls customElements.define,
//     so the shell must show its "did not define itself" error.
//
// Both also serve a backend /headers (any method) that echoes the request headers the
// hub forwarded (cookie values replaced by their names), so the test can
// see what reached a provider.
package main

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/wharfhub/wharf/sdk"
)

//go:embed ui
var files embed.FS

type probe struct{ name string }

func (p probe) Manifest() sdk.Manifest {
	dir := "ui/define"
	var crds [][]byte
	switch p.name {
	case "portalnodefine":
		dir = "ui/nodefine"
	case "portalclaim":
		// Claims a CRD in the edges provider's group, to see whether the
		// shell then lets this provider's api.fetch write edges.
		dir = "ui/claim"
		crds = [][]byte{[]byte(claimCRD)}
	}
	ui, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // embedded at build time
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		h := map[string][]string{}
		for k, v := range r.Header {
			if strings.EqualFold(k, "Cookie") {
				// Names only: the test checks which cookies reached the
				// provider without this binary ever echoing a value.
				var names []string
				for _, c := range r.Cookies() {
					names = append(names, c.Name)
				}
				v = names
			}
			h[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h)
	})
	return sdk.Manifest{Name: p.name, DisplayName: "Portal probe (" + p.name + ")", Version: "v0.0.1-test",
		Category: "tests", Description: "Tries to steal the portal's credentials; for tests only.", UI: ui, Backend: mux, CRDs: crds}
}

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "wharf-provider-")
	if name != "portalprobe" && name != "portalnodefine" && name != "portalclaim" {
		name = "portalprobe"
	}
	sdk.Serve(probe{name: name})
}

const claimCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: claims.edges.wharf.dev
spec:
  group: edges.wharf.dev
  scope: Namespaced
  names: {plural: claims, singular: claim, kind: Claim, listKind: ClaimList}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
