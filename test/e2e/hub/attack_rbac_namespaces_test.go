package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// Finding 8 of issue 11: DELETE /api/v1/namespaces deleted every namespace
// of a workspace, default and kube-system included. kube-apiserver does not
// serve deletecollection on namespaces (405 MethodNotAllowed) and does not
// advertise it; neither does the hub now. The rest of the class: every
// named-delete variant of default and kube-system is refused.

// bobNamespaceChild creates {N} = {bobHome}:ns-{n}, a workspace bob owns, so that an
// unfixed hub loses that workspace's namespaces and not those of bob's
// home, which later rows use. It sets {N}, {NID} and {defaultUID}.
func bobNamespaceChild(e *attackEnv, vars map[string]string) error {
	name := "ns-" + vars["n"]
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/tenancy.wharf.dev/v1alpha1/workspaces",
		`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"`+name+`"}}`, vars); err != nil {
		return err
	}
	vars["N"] = vars["bobHome"] + ":" + name
	var ws struct {
		Status struct{ Cluster string } `json:"status"`
	}
	if err := getJSON(e, "bob", "/clusters/{bobHome}/apis/tenancy.wharf.dev/v1alpha1/workspaces/"+name, vars, &ws); err != nil || ws.Status.Cluster == "" {
		return fmt.Errorf("reading workspace %s: %v %+v", name, err, ws)
	}
	vars["NID"] = ws.Status.Cluster
	var ns struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := getJSON(e, "bob", "/clusters/{N}/api/v1/namespaces/default", vars, &ns); err != nil {
		return err
	}
	vars["defaultUID"] = ns.Metadata.UID
	return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{N}/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`, vars)
}

func getJSON(e *attackEnv, who, path string, vars map[string]string, into any) error {
	code, body := e.as(who, http.MethodGet, path, "", vars)
	if code != http.StatusOK {
		return fmt.Errorf("GET %s as %s: %d %s", expand(path, vars), who, code, body)
	}
	return json.Unmarshal([]byte(body), into)
}

// immortalSurvive checks that default and kube-system of {N} exist and are
// not terminating, and that discovery, plain and aggregated, does not offer
// deletecollection on namespaces.
func immortalSurvive(e *attackEnv, vars map[string]string) error {
	for _, ns := range []string{"default", "kube-system"} {
		var obj struct {
			Metadata struct {
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := getJSON(e, "bob", "/clusters/{N}/api/v1/namespaces/"+ns, vars, &obj); err != nil {
			return err
		}
		if obj.Metadata.DeletionTimestamp != nil {
			return fmt.Errorf("namespace %s is being deleted", ns)
		}
	}
	var list struct {
		Resources []struct {
			Name  string
			Verbs []string
		}
	}
	if err := getJSON(e, "bob", "/clusters/{N}/api/v1", vars, &list); err != nil {
		return err
	}
	for _, r := range list.Resources {
		if r.Name == "namespaces" && (slices.Contains(r.Verbs, "deletecollection") || !slices.Contains(r.Verbs, "delete")) {
			return fmt.Errorf("discovery /api/v1: namespaces verbs %v", r.Verbs)
		}
	}
	code, body := e.send(step{as: "bob", method: http.MethodGet, path: "/clusters/{N}/api",
		header: map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}}, vars)
	var agg struct {
		Items []struct {
			Versions []struct {
				Resources []struct {
					Resource string
					Verbs    []string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &agg); code != http.StatusOK || err != nil {
		return fmt.Errorf("aggregated discovery: %d %v %s", code, err, body)
	}
	found := false
	for _, g := range agg.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				if r.Resource == "namespaces" {
					found = true
					if slices.Contains(r.Verbs, "deletecollection") {
						return fmt.Errorf("aggregated discovery: namespaces verbs %v", r.Verbs)
					}
				}
			}
		}
	}
	if !found {
		return fmt.Errorf("aggregated discovery lists no namespaces: %s", body)
	}
	return nil
}

const (
	notAllowed = "MethodNotAllowed"
	immortal   = "cannot be deleted"
)

func init() {
	del := func(path, body string) step {
		return step{as: "bob", method: http.MethodDelete, path: path, body: body, want: http.StatusMethodNotAllowed, has: notAllowed}
	}
	named := func(path, body string) step {
		return step{as: "bob", method: http.MethodDelete, path: path, body: body, want: http.StatusForbidden, has: immortal}
	}
	registerAttacks(
		attack{finding: "11.8", name: "DELETE the namespace collection (every variant, every address)",
			before: bobNamespaceChild,
			steps: []step{
				del("/clusters/{N}/api/v1/namespaces?dryRun=All", ""),
				del("/clusters/{NID}/api/v1/namespaces?labelSelector=kubernetes.io/metadata.name%3Ddefault", ""),
				del("/clusters/{N}/api/v1/namespaces", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`),
				del("/clusters/{N}/api/v1/namespaces?propagationPolicy=Orphan&gracePeriodSeconds=0", ""),
				del("/clusters/{N}/api/v1/namespaces", ""),
				del("/clusters/{bobHome}/api/v1/namespaces?dryRun=All", ""),
				del("/clusters/{bobID}/api/v1/namespaces?dryRun=All", ""),
				// Root: bob has no rights there; a hub administrator meets the
				// missing verb (dry run, so an unfixed hub keeps root whole).
				{as: "bob", method: http.MethodDelete, path: "/api/v1/namespaces", want: http.StatusForbidden},
				{as: "hubadmin", method: http.MethodDelete, path: "/api/v1/namespaces?dryRun=All", want: http.StatusMethodNotAllowed, has: notAllowed},
				{as: "bob", method: http.MethodGet, path: "/clusters/{N}/api/v1/namespaces/team", want: http.StatusOK},
			},
			after: immortalSurvive},
		attack{finding: "11.8", name: "named deletes of default and kube-system (dry run, preconditions, propagation, no finalizer)",
			before: bobNamespaceChild,
			steps: []step{
				named("/clusters/{N}/api/v1/namespaces/default", ""),
				named("/clusters/{NID}/api/v1/namespaces/kube-system", ""),
				named("/clusters/{N}/api/v1/namespaces/default?dryRun=All", ""),
				named("/clusters/{N}/api/v1/namespaces/default", `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"{defaultUID}"}}`),
				named("/clusters/{N}/api/v1/namespaces/default?propagationPolicy=Orphan", ""),
				named("/clusters/{N}/api/v1/namespaces/default?propagationPolicy=Foreground", ""),
				named("/clusters/{N}/api/v1/namespaces/kube-system?propagationPolicy=Background&gracePeriodSeconds=0", ""),
				// Without the content finalizer the store deletes at once;
				// admission still decides first.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{N}/api/v1/namespaces/default", body: `{"metadata":{"finalizers":null}}`, want: http.StatusOK},
				named("/clusters/{N}/api/v1/namespaces/default", ""),
				// deletionTimestamp is the server's; a patch cannot start deletion.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{N}/api/v1/namespaces/kube-system", body: `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`},
				// Other namespaces are still the admin's to delete.
				{as: "bob", method: http.MethodDelete, path: "/clusters/{N}/api/v1/namespaces/team", want: http.StatusOK},
			},
			after: immortalSurvive},
	)
}
