package hub

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Every write path (issue 11, finding 4 and its class). A rule that lives
// in a Create method holds for POST only; server-side apply (and PUT,
// where a storage allows create on update) creates through Update, and a
// dry run must be refused exactly as the real request. bob, admin of his
// home, writes CatalogEntries there (which the hub once indexed hub-wide:
// an entry claiming rbac.authorization.k8s.io or tenancy.wharf.dev made
// those answer 404 in every workspace), binds providers that do not
// exist, and writes status the hub owns.

const (
	ceBase = "/apis/providers.wharf.dev/v1alpha1/catalogentries"
	pbBase = "/apis/providers.wharf.dev/v1alpha1/providerbindings"
	apply  = "application/apply-patch+yaml"
)

// greedyEntry claims the hub's own groups and the example provider's.
func greedyEntry(name string) string {
	return `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"` + name + `"},` +
		`"spec":{"edgeProxyAccess":true,"apis":[` +
		`{"name":"rolebindings.rbac.authorization.k8s.io","group":"rbac.authorization.k8s.io","resource":"rolebindings"},` +
		`{"name":"clusterrolebindings.rbac.authorization.k8s.io","group":"rbac.authorization.k8s.io","resource":"clusterrolebindings"},` +
		`{"name":"workspaces.tenancy.wharf.dev","group":"tenancy.wharf.dev","resource":"workspaces"},` +
		`{"name":"widgets.example.wharf.dev","group":"example.wharf.dev","resource":"widgets"}]}}`
}

func bindingTo(name, provider string) string {
	return `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"` + name + `"},"spec":{"provider":"` + provider + `"}}`
}

// catalogBarrier waits until the enablement index has seen every catalog
// write made before it: the admin adds an entry in root claiming a group
// of its own, and the index delivers events in etcd order, so once the
// enablement filter names that entry as the group's owner, any entry
// written earlier (bob's, had it been stored) is in the index too. It
// waits on the index's state, never on a duration; the deadline only
// bounds a broken hub.
func catalogBarrier(e *attackEnv, vars map[string]string) error {
	name := expand("barrier-{n}", vars)
	group := name + ".example.com"
	body := `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"` + name + `"},` +
		`"spec":{"apis":[{"name":"things.` + group + `","group":"` + group + `","resource":"things"}]}}`
	if err := e.wantAs(http.StatusCreated, "admin", http.MethodPost, ceBase, body, vars); err != nil {
		return err
	}
	defer e.as("admin", http.MethodDelete, ceBase+"/"+name, "", vars)
	// The code and body are kube's for an unserved group either way; the
	// hub's hint to administrators names the owner once the index has it.
	want := `belongs to provider \"` + name + `\"`
	for deadline := time.Now().Add(60 * time.Second); ; {
		code, hdr, b := e.sendFull(step{as: "admin", method: http.MethodGet, path: "/apis/" + group + "/v1/things"}, vars)
		if code == http.StatusNotFound && strings.Contains(hdr.Get("Warning"), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the enablement index never saw %s: %d %s %v", name, code, b, hdr["Warning"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// builtinsStillServed is the postcondition of every catalog row: after the
// index caught up, RBAC and workspaces still answer for their owners, by
// path, by id and in root.
func builtinsStillServed(e *attackEnv, vars map[string]string) error {
	if err := catalogBarrier(e, vars); err != nil {
		return err
	}
	for _, c := range []struct{ who, path string }{
		{"alice", "/clusters/{aliceHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"},
		{"alice", "/clusters/{aliceID}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
		{"alice", "/clusters/{aliceHome}/apis/tenancy.wharf.dev/v1alpha1/workspaces"},
		{"bob", "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"},
		{"admin", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"},
		{"admin", "/clusters/root/apis/tenancy.wharf.dev/v1alpha1/workspaces"},
		{"admin", "/clusters/{aliceID}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"},
	} {
		if err := e.wantAs(http.StatusOK, c.who, http.MethodGet, c.path, "", vars); err != nil {
			return err
		}
	}
	// The catalog shows root's entries only.
	code, b := e.as("alice", http.MethodGet, ceBase, "", vars)
	if code != http.StatusOK || strings.Contains(b, expand("evil-{n}", vars)) {
		return fmt.Errorf("catalog as alice: %d, holds bob's entry: %s", code, b)
	}
	return nil
}

func init() {
	registerAttacks(catalogRows()...)
	registerAttacks(bindingRows()...)
	registerAttacks(tokenRows()...)
	registerAttacks(crdRows()...)
}

// crdRows: CustomResourceDefinitions are hub-wide, so a workspace admin
// may not write them on any path (the hub guard decides on the verb,
// which covers server-side apply as patch, and the status subresource).
func crdRows() []attack {
	const crdBase = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.{n}.example.com"},` +
		`"spec":{"group":"{n}.example.com","names":{"kind":"Thing","plural":"things"},"scope":"Namespaced",` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`
	var steps []step
	for _, prefix := range []string{"/clusters/{bobHome}", "/clusters/{bobID}", ""} {
		steps = append(steps,
			step{as: "bob", method: http.MethodPost, path: prefix + crdBase, body: crd, want: http.StatusForbidden},
			step{as: "bob", method: http.MethodPost, path: prefix + crdBase + "?dryRun=All", body: crd, want: http.StatusForbidden},
			step{as: "bob", method: http.MethodPatch, path: prefix + crdBase + "/things.{n}.example.com?fieldManager=x", ctype: apply, body: crd, want: http.StatusForbidden},
			step{as: "bob", method: http.MethodPatch, path: prefix + crdBase + "/widgets.example.wharf.dev/status", body: `{"status":{"acceptedNames":{"kind":"X","plural":"xs"}}}`, want: http.StatusForbidden},
			step{as: "bob", method: http.MethodDelete, path: prefix + crdBase + "?labelSelector=x%3Dy", want: http.StatusForbidden},
		)
	}
	return []attack{{finding: "11.4", name: "custom resource definitions from a home, every write path", steps: steps}}
}

func catalogRows() []attack {
	refused := func(name, path, method, ctype string) attack {
		return attack{finding: "11.4", name: name, after: builtinsStillServed, steps: []step{
			{as: "bob", method: method, path: path, ctype: ctype, body: greedyEntry("evil-{n}"), want: http.StatusForbidden},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + ceBase + "/evil-{n}", want: http.StatusNotFound},
		}}
	}
	rows := []attack{
		refused("catalog entry in a home by POST", "/clusters/{bobHome}"+ceBase, http.MethodPost, ""),
		refused("catalog entry in a home by POST, dry run", "/clusters/{bobHome}"+ceBase+"?dryRun=All", http.MethodPost, ""),
		refused("catalog entry in a home by server-side apply", "/clusters/{bobHome}"+ceBase+"/evil-{n}?fieldManager=x", http.MethodPatch, apply),
		refused("catalog entry in a home by server-side apply, by id", "/clusters/{bobID}"+ceBase+"/evil-{n}?fieldManager=x", http.MethodPatch, apply),
		refused("catalog entry in a home by server-side apply, dry run", "/clusters/{bobHome}"+ceBase+"/evil-{n}?fieldManager=x&dryRun=All", http.MethodPatch, apply),
		refused("catalog entry in a home by server-side apply, forced", "/clusters/{bobHome}"+ceBase+"/evil-{n}?fieldManager=x&force=true", http.MethodPatch, apply),
		// Without a prefix the request addresses root, where bob holds
		// no RBAC at all.
		refused("catalog entry in root by server-side apply", ceBase+"/evil-{n}?fieldManager=x", http.MethodPatch, apply),
		refused("catalog entry in root by POST", ceBase, http.MethodPost, ""),
		{finding: "11.4", name: "catalog entry named like a real provider, by server-side apply", after: builtinsStillServed, steps: []step{
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobID}" + ceBase + "/example?fieldManager=x", ctype: apply,
				body: greedyEntry("example"), want: http.StatusForbidden},
			// Repeated at once: nothing of the first try is cached.
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobID}" + ceBase + "/example?fieldManager=x", ctype: apply,
				body: greedyEntry("example"), want: http.StatusForbidden},
		}},
		{finding: "11.4", name: "catalog entry in a home by PUT", steps: []step{
			// No create on update: a missing name is 404 before any hook.
			{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}" + ceBase + "/evil-{n}", body: greedyEntry("evil-{n}"), want: http.StatusNotFound},
		}},
		// A hub admin may write root's catalog, but no entry may own a
		// built-in group, on any path.
		{finding: "11.4", name: "catalog entry claiming built-in groups, in root, as admin", after: builtinsStillServed, steps: []step{
			{as: "admin", method: http.MethodPost, path: ceBase, body: greedyEntry("evil-{n}"), want: http.StatusUnprocessableEntity,
				has: `rbac.authorization.k8s.io\" is served by the hub or reserved`},
			{as: "admin", method: http.MethodPatch, path: ceBase + "/evil-{n}?fieldManager=x", ctype: apply, body: greedyEntry("evil-{n}"),
				want: http.StatusUnprocessableEntity, has: `tenancy.wharf.dev\" is served by the hub or reserved`},
			{as: "hubadmin", method: http.MethodPatch, path: "/clusters/{rootID}" + ceBase + "/evil-{n}?fieldManager=x&dryRun=All", ctype: apply,
				body: greedyEntry("evil-{n}"), want: http.StatusUnprocessableEntity},
			{as: "admin", method: http.MethodPatch, path: ceBase + "/example", body: `{"spec":{"apis":[{"name":"x","group":"rbac.authorization.k8s.io"}]}}`,
				want: http.StatusUnprocessableEntity},
		}},
		// Catalog status is the hub's record of its replicas: nobody else
		// writes it, not on create and not through a subresource.
		{finding: "11.4", name: "catalog status written by a client", steps: []step{
			{as: "admin", method: http.MethodPost, path: ceBase, body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry",` +
				`"metadata":{"name":"forged-{n}"},"status":{"conditions":[{"type":"Ready","status":"True","reason":"Forged","message":"forged",` +
				`"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, want: http.StatusCreated, hasNot: "Forged"},
			{as: "admin", method: http.MethodPatch, path: ceBase + "/forged-{n}/status",
				body: `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Forged","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`,
				want: http.StatusNotFound},
			{as: "admin", method: http.MethodPatch, path: ceBase + "/example/status?fieldManager=x", ctype: apply,
				body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"example"},"status":{"conditions":[]}}`,
				want: http.StatusNotFound},
			{as: "admin", method: http.MethodGet, path: ceBase + "/forged-{n}", want: http.StatusOK, hasNot: "Forged"},
			{as: "admin", method: http.MethodDelete, path: ceBase + "/forged-{n}", want: http.StatusOK},
		}},
	}
	return rows
}

func bindingRows() []attack {
	return []attack{
		{finding: "11.4", name: "binding to a missing provider, every create path", steps: []step{
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + pbBase, body: bindingTo("b-{n}", "nope-{n}"),
				want: http.StatusUnprocessableEntity, has: "no such provider in the catalog"},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + pbBase + "?dryRun=All", body: bindingTo("b-{n}", "nope-{n}"),
				want: http.StatusUnprocessableEntity, has: "no such provider in the catalog"},
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + pbBase + "/b-{n}?fieldManager=x", ctype: apply,
				body: bindingTo("b-{n}", "nope-{n}"), want: http.StatusUnprocessableEntity, has: "no such provider in the catalog"},
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobID}" + pbBase + "/b-{n}?fieldManager=x&dryRun=All", ctype: apply,
				body: bindingTo("b-{n}", "nope-{n}"), want: http.StatusUnprocessableEntity, has: "no such provider in the catalog"},
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobID}" + pbBase + "/b-{n}?fieldManager=x&force=true", ctype: apply,
				body: bindingTo("b-{n}", "nope-{n}"), want: http.StatusUnprocessableEntity, has: "no such provider in the catalog"},
			{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}" + pbBase + "/b-{n}", body: bindingTo("b-{n}", "nope-{n}"),
				want: http.StatusNotFound},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + pbBase + "/b-{n}", want: http.StatusNotFound},
		}},
		{finding: "11.4", name: "binding with a missing provider, by the admin, in root", steps: []step{
			{as: "admin", method: http.MethodPatch, path: pbBase + "/b-{n}?fieldManager=x", ctype: apply,
				body: bindingTo("b-{n}", "nope-{n}"), want: http.StatusUnprocessableEntity, has: "no such provider in the catalog"},
		}},
		// A binding enables a provider where it is stored, as the hub
		// recorded it: the cluster annotation is the hub's, and bob's
		// binding cannot name alice's workspace.
		{finding: "11.4", name: "binding enables only its own workspace", steps: []step{
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + pbBase + "/b-{n}?fieldManager=x", ctype: apply,
				body: `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"b-{n}",` +
					`"annotations":{"wharf.dev/cluster":"{aliceID}"}},"spec":{"provider":"example"}}`,
				want: http.StatusCreated, has: `"wharf.dev/cluster":"{bobID}"`, hasNot: `"wharf.dev/cluster":"{aliceID}"`},
			{as: "bob", method: http.MethodPatch, path: "/clusters/{aliceHome}" + pbBase + "/b-{n}?fieldManager=x", ctype: apply,
				body: bindingTo("b-{n}", "example"), want: http.StatusForbidden},
			{as: "bob", method: http.MethodPost, path: "/clusters/{aliceID}" + pbBase, body: bindingTo("b-{n}", "example"), want: http.StatusForbidden},
			{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/apis/example.wharf.dev/v1alpha1/namespaces/default/widgets",
				want: http.StatusNotFound, has: "404 page not found"},
			// Binding status is the enablement controller's record.
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + pbBase + "/b-{n}/status",
				body: `{"status":{"conditions":[{"type":"Bound","status":"True","reason":"Forged","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`,
				want: http.StatusNotFound},
			// The binding stays: the next row relies on the provider
			// being enabled in bob's home.
		}},
		// The hub binds the provider to a role of a predictable name; bob
		// makes that role grant everything and enables the provider (again).
		// The hub must bind it to its grant, not to bob's role.
		{finding: "11.4", name: "binding makes the hub bind a provider to a planted role", after: grantConverged, steps: []step{
			// Created or taken over, whichever comes first: the grant of
			// the row before may or may not exist yet.
			{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles/wharf:provider:example:edge-proxy?fieldManager=bob&force=true",
				ctype: apply, body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"wharf:provider:example:edge-proxy"},` +
					`"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + pbBase, body: bindingTo("planted-{n}", "example"), want: http.StatusCreated},
		}},
	}
}

// grantConverged waits until the enablement controller has made bob's
// planted edge-proxy role exactly the grant (it reconciles after the
// binding is stored); the deadline only bounds a broken hub.
func grantConverged(e *attackEnv, vars map[string]string) error {
	path := "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles/wharf:provider:example:edge-proxy"
	for deadline := time.Now().Add(60 * time.Second); ; {
		code, b := e.as("bob", http.MethodGet, path, "", vars)
		if code == http.StatusOK && strings.Contains(b, `"rules":[{"verbs":["proxy"],"apiGroups":["edges.wharf.dev"],"resources":["edges"]},{"verbs":["access"],"nonResourceURLs":["/"]}]`) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the edge-proxy role never became the grant: %d %s", code, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tokenRows() []attack {
	const sa = `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa-{n}"}}`
	const tr = `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`
	return []attack{
		// A dry run has no effect, and a signed token is one: it would
		// be a working credential.
		{finding: "11.4", name: "token request dry run mints nothing", steps: []step{
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts", body: sa, want: http.StatusCreated},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token?dryRun=All",
				body: tr, want: http.StatusCreated, has: `"kind":"TokenRequest"`, hasNot: `"token":"ey`},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobID}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token?dryRun=All",
				body: tr, want: http.StatusCreated, hasNot: `"token":"ey`},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/nobody-{n}/token?dryRun=All",
				body: tr, want: http.StatusNotFound},
			{as: "bob", method: http.MethodPost, path: "/clusters/{aliceHome}/api/v1/namespaces/default/serviceaccounts/default/token?dryRun=All",
				body: tr, want: http.StatusForbidden, hasNot: `"token":"ey`},
			// The real request still works.
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token",
				body: tr, want: http.StatusCreated, has: `"token":"ey`},
		}},
		{finding: "11.4", name: "token request naming another service account in the body", steps: []step{
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts", body: sa, want: http.StatusCreated},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token",
				body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"name":"default"},"spec":{}}`,
				want: http.StatusUnprocessableEntity, has: "must match the service account name", hasNot: `"token":"ey`},
			// The request handler refuses another namespace before storage.
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/api/v1/namespaces/default/serviceaccounts/sa-{n}/token",
				body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"namespace":"kube-system"},"spec":{}}`,
				want: http.StatusBadRequest, hasNot: `"token":"ey`},
		}},
	}
}
