package hub

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Rows of the attack review about writes that reach hub-wide state: the
// catalog (B5, B7, attempts 40, 44, 46, 69), workspace status aimed at
// the hub's global cluster (attempt 38), CRDs (71), the cluster
// annotation (51, 52), namespace deletion (72) and the review APIs (57, 59).

// revClaim is an entry claiming one API group; name and group vary.
func revClaim(name, plural, group string) string {
	return `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"` + name + `"},` +
		`"spec":{"apis":[{"name":"` + plural + "." + group + `","group":"` + group + `","resource":"` + plural + `"}]}}`
}

// leasesServed checks the API groups a claim aimed at still answer, for
// alice in her home and for the admin in root.
func leasesServed(e *attackEnv, vars map[string]string) error {
	if err := catalogBarrier(e, vars); err != nil {
		return err
	}
	for _, c := range []struct{ who, path string }{
		{"alice", "/clusters/{aliceHome}/apis/coordination.k8s.io/v1/namespaces/default/leases"},
		{"admin", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"},
		{"admin", ceBase},
		{"alice", "/clusters/{aliceID}" + pbBase},
	} {
		if err := e.wantAs(http.StatusOK, c.who, http.MethodGet, c.path, "", vars); err != nil {
			return err
		}
	}
	return nil
}

func init() {
	ssa := func(prefix, name, body string) step {
		return step{as: "bob", method: http.MethodPatch, path: prefix + ceBase + "/" + name + "?fieldManager=m", ctype: apply, body: body,
			want: http.StatusForbidden, has: "catalog entries exist only in the root workspace"}
	}
	registerAttacks(
		// B5 (attempts 18, 19, 40): the tester's claims of leases and of
		// the catalog's own group, by server-side apply from bob's home.
		attack{finding: "review:B5", name: "server-side applied catalog entries claiming leases and the catalog itself",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + ceBase, body: revClaim("evilcat-{n}", "leases", "coordination.k8s.io"),
					want: http.StatusForbidden, has: "catalog entries exist only in the root workspace"},
				ssa("/clusters/{bobHome}", "aaa-{n}", revClaim("aaa-{n}", "leases", "coordination.k8s.io")),
				ssa("/clusters/{bobID}", "aaa-{n}", revClaim("aaa-{n}", "catalogentries", "providers.wharf.dev")),
				ssa("/clusters/{bobHome}", "aaa-{n}", revClaim("aaa-{n}", "customresourcedefinitions", "apiextensions.k8s.io")),
				{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/apis/coordination.k8s.io/v1/namespaces/default/leases", want: http.StatusOK},
			},
			after: leasesServed},
		// B7 (attempt 45): a fake entry named like a real provider,
		// claiming the core group; then alice binds and unbinds that
		// provider, as she may. Her core objects must survive.
		attack{finding: "review:B7", name: "fake same-name entry claiming core, then the victim unbinds the provider",
			before: aliceObjects,
			steps: []step{
				ssa("/clusters/{bobHome}", "example", revClaim("example", "secrets", "core")),
				ssa("/clusters/{bobID}", "zzz-{n}", revClaim("zzz-{n}", "secrets", "core")),
				{as: "alice", method: http.MethodPost, path: "/clusters/{aliceHome}" + pbBase, body: bindingTo("example", "example"), want: http.StatusCreated},
				{as: "alice", method: http.MethodDelete, path: "/clusters/{aliceHome}" + pbBase + "/example", want: http.StatusOK},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				// Unbinding purges in the background: wait until the
				// binding is gone, then the provider's objects are too, and
				// alice's core objects must still be there.
				if err := waitFor(60*time.Second, func() error {
					return e.wantAs(http.StatusNotFound, "alice", http.MethodGet, "/clusters/{aliceHome}"+pbBase+"/example", "", vars)
				}); err != nil {
					return err
				}
				for _, p := range []string{revSecrets + "/rs-{n}", revCMs + "/rc-{n}", "/api/v1/namespaces/default", "/api/v1/namespaces/kube-system"} {
					if err := e.wantAs(http.StatusOK, "alice", http.MethodGet, "/clusters/{aliceHome}"+p, "", vars); err != nil {
						return fmt.Errorf("after the unbind: %w", err)
					}
				}
				return nil
			}},
		// Attempts 46, 69 (and 44): the remaining write paths of the
		// catalog and of bindings from bob's home.
		attack{finding: "review:69", name: "catalog and binding status from a home, binding provider changed",
			steps: []step{
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + ceBase + "/st-{n}/status?fieldManager=m", ctype: apply,
					body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"st-{n}"},"status":{}}`, want: http.StatusNotFound},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + ceBase + "/example/status",
					body: `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Phish","message":"visit evil.example","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, want: http.StatusNotFound},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + pbBase + "/pbst-{n}/status?fieldManager=m", ctype: apply,
					body: bindingTo("pbst-{n}", "example"), want: http.StatusNotFound},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + pbBase + "/pbst-{n}", want: http.StatusNotFound},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + pbBase, body: bindingTo("pb-{n}", "example"), want: http.StatusCreated},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + pbBase + "/pb-{n}", body: `{"spec":{"provider":"nope-{n}"}}`,
					want: http.StatusUnprocessableEntity, has: "field is immutable"},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobID}" + pbBase + "/pb-{n}?fieldManager=m&force=true", ctype: apply,
					body: bindingTo("pb-{n}", "nope-{n}"), want: http.StatusUnprocessableEntity},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + pbBase + "/pb-{n}", want: http.StatusOK},
				{as: "alice", method: http.MethodGet, path: ceBase + "/example", want: http.StatusOK, hasNot: "Phish"},
			}},
		// Attempt 71: definitions are hub-wide; bob reads them, writes none.
		attack{finding: "review:71", name: "CRDs from a home: named delete, list and get",
			steps: []step{
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.wharf.dev", want: http.StatusForbidden},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobID}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.wharf.dev?dryRun=All", want: http.StatusForbidden},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.wharf.dev", want: http.StatusOK},
				{as: "admin", method: http.MethodGet, path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.wharf.dev", want: http.StatusOK, hasNot: "deletionTimestamp"},
			}},
		// Attempts 51, 52: the cluster annotation is the hub's on every
		// write path and body format.
		attack{finding: "review:51", name: "forged wharf.dev/cluster annotation on every write path and body format",
			steps: func() []step {
				cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fa-{n}","annotations":{"wharf.dev/cluster":"{aliceID}"}}}`
				own := `"wharf.dev/cluster":"{bobID}"`
				ok := func(code int, s step) step {
					s.as, s.want, s.has, s.hasNot = "bob", code, own, "{aliceID}"
					return s
				}
				crb := strings.Replace(revOwnAlice, `"metadata":{"name":"bob-owns-{n}"}`, `"metadata":{"name":"fa-{n}","annotations":{"wharf.dev/cluster":"{aliceID}"}}`, 1)
				return []step{
					ok(http.StatusCreated, step{method: http.MethodPost, path: "/clusters/{bobHome}" + revCMs, body: cm}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + revCMs + "/fa-{n}", ctype: "application/json-patch+json",
						body: `[{"op":"remove","path":"/metadata/annotations"}]`}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + revCMs + "/fa-{n}", body: `{"metadata":{"annotations":{"wharf.dev/cluster":"{aliceID}"}}}`}),
					ok(http.StatusOK, step{method: http.MethodPatch, path: "/clusters/{bobHome}" + revCMs + "/fa-{n}?fieldManager=m&force=true", ctype: apply, body: cm}),
					ok(http.StatusOK, step{method: http.MethodPut, path: "/clusters/{bobHome}" + revCMs + "/fa-{n}", body: cm}),
					ok(http.StatusCreated, step{method: http.MethodPost, path: "/clusters/{bobHome}" + revCMs, ctype: "application/yaml",
						body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fy-{n}\n  annotations:\n    wharf.dev/cluster: {aliceID}\n"}),
					ok(http.StatusCreated, step{method: http.MethodPost, path: "/clusters/{bobHome}" + revCRBs, body: crb}),
					{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + revCMs, ctype: "application/cbor", body: "\xa0", want: http.StatusUnsupportedMediaType},
					// alice's RBAC did not gain bob's binding.
					{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revCMs, want: http.StatusForbidden},
					{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}" + revCRBs + "/fa-{n}", want: http.StatusNotFound},
					{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + revCRBs + "/fa-{n}", want: http.StatusOK},
				}
			}()},
		// Attempt 72: namespaces of the same name in two workspaces are
		// two namespaces; deleting bob's empties only his.
		attack{finding: "review:72", name: "deleting bob's namespace leaves alice's namesake and its content",
			before: func(e *attackEnv, vars map[string]string) error {
				ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-{n}"}}`
				cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`
				for _, who := range []string{"alice", "bob"} {
					home := "/clusters/{" + who + "Home}"
					if err := e.wantAs(http.StatusCreated, who, http.MethodPost, home+"/api/v1/namespaces", ns, vars); err != nil {
						return err
					}
					if err := e.wantAs(http.StatusCreated, who, http.MethodPost, home+"/api/v1/namespaces/team-{n}/configmaps", cm, vars); err != nil {
						return err
					}
				}
				return nil
			},
			steps: []step{{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}/api/v1/namespaces/team-{n}", want: http.StatusOK}},
			after: func(e *attackEnv, vars map[string]string) error {
				if err := waitFor(60*time.Second, func() error {
					return e.wantAs(http.StatusNotFound, "bob", http.MethodGet, "/clusters/{bobHome}/api/v1/namespaces/team-{n}", "", vars)
				}); err != nil {
					return err
				}
				if err := e.wantAs(http.StatusOK, "alice", http.MethodGet, "/clusters/{aliceHome}/api/v1/namespaces/team-{n}/configmaps/c", "", vars); err != nil {
					return err
				}
				return e.wantAs(http.StatusOK, "alice", http.MethodDelete, "/clusters/{aliceHome}/api/v1/namespaces/team-{n}", "", vars)
			}},
		// Attempt 57: TokenReview is no oracle for other people's tokens.
		// It is served (issue 12), but a workspace admin reviewing the
		// token of somebody who may not use the workspace gets the answer
		// of a wrong token (hub/serviceaccounts' threat model), dry run
		// or not.
		attack{finding: "review:57", name: "TokenReview reveals nobody outside the workspace",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1", want: http.StatusOK, has: `"name":"selfsubjectreviews"`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/tokenreviews",
					body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice-token"}}`, want: http.StatusCreated, has: `"error":"invalid bearer token"`, hasNot: `"authenticated":true`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/authentication.k8s.io/v1/tokenreviews?dryRun=All",
					body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice-token"}}`, want: http.StatusCreated, has: `"error":"invalid bearer token"`, hasNot: `"authenticated":true`},
				{as: "bob", method: http.MethodPost, path: "/apis/authentication.k8s.io/v1/tokenreviews",
					body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"alice-token"}}`, hasNot: `"authenticated":true`},
			}},
		// Attempt 59: malformed reviews are 400s, and the hub lives on.
		attack{finding: "review:59", name: "malformed access reviews",
			steps: func() []step {
				base := "/clusters/{bobHome}/apis/authorization.k8s.io/v1/"
				bad := func(path, body, has string) step {
					return step{as: "bob", method: http.MethodPost, path: base + path, body: body, want: http.StatusBadRequest, has: has}
				}
				return []step{
					bad("selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}`, "one of resourceAttributes and nonResourceAttributes is required"),
					bad("selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":null}`, "is required"),
					bad("selfsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, "exclusive"),
					bad("namespaces/default/localsubjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{}}`, ""),
					bad("selfsubjectrulesreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`, "spec.namespace is required"),
					{as: "bob", method: http.MethodPost, path: base + "selfsubjectaccessreviews", want: http.StatusCreated,
						body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list","resource":"secrets","fieldSelector":{"requirements":[{"key":"","operator":"Bogus"}]},"labelSelector":{"rawSelector":"!!!(("}}}}`},
					{as: "bob", method: http.MethodPost, path: base + "selfsubjectaccessreviews", body: "null"},
					{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces/default", want: http.StatusOK},
				}
			}()},
		// Attempt 50: other output forms of the same lists.
		attack{finding: "review:50", name: "Table and PartialObjectMetadata output of hub resources",
			before: aliceObjects,
			steps: func() []step {
				var steps []step
				for _, accept := range []string{
					"application/json;as=Table;v=v1;g=meta.k8s.io",
					"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
				} {
					for _, p := range []string{wsAPI, ceBase, pbBase, revSecrets, "/apis/rbac.authorization.k8s.io/v1/clusterroles"} {
						steps = append(steps, step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + p + "?includeObject=Object&limit=2",
							header: map[string]string{"Accept": accept}, want: http.StatusOK, hasNot: revLeak})
					}
					steps = append(steps, step{as: "bob", method: http.MethodGet, path: "/clusters/{aliceHome}" + revSecrets,
						header: map[string]string{"Accept": accept}, want: http.StatusForbidden, hasNot: revLeak})
				}
				return steps
			}()},
	)
	// Attempt 38: a child whose stored status names the hub's global
	// cluster (which holds the CRDs); deleting it deletes no CRD.
	global := tamperedDelete("stored status names the global cluster, delete", "system:global", "{bobHome}:del-{n}", "/clusters/{bobHome}")
	global.finding = "review:38"
	after := global.after
	global.after = func(e *attackEnv, vars map[string]string) error {
		if err := after(e, vars); err != nil {
			return err
		}
		return e.wantAs(http.StatusOK, "admin", http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.wharf.dev", "", vars)
	}
	registerAttacks(global)
}
