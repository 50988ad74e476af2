package hub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/quota"
)

// Rows r24 (attack_review24_test.go) about what a workspace tells, who
// may change a ceiling, identities, process-wide paths and the ceilings
// under concurrency.

// r24Same sends probes as mallory at victor's workspaces and at missing
// ones (oraclePairs: by path, by id, a missing child of a hidden one) and
// requires one uniform 403 Status per probe.
func r24Same(t *testing.T, e *attackEnv, n string, probes []oracleProbe) {
	t.Helper()
	vars := r24Vars(e, n)
	if err := missingID(e, vars); err != nil {
		t.Fatal(err)
	}
	if err := sameDenial("mallory", probes)(e, vars); err != nil {
		t.Error(err)
	}
}

// r24Raise is what a workspace admin would like her ceilings to be.
const r24Raise = `{"quota.wharf.dev/max-child-workspaces":"1000","quota.wharf.dev/max-tenant-bytes":"99999999999"}`

func r24RaisedWS(name string) string {
	return fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q,"annotations":%s}}`, name, r24Raise)
}

// r24OverrideKept checks that r24-g carries the hub admin's override and
// nothing of mallory's, and that the override is what is in force.
func r24OverrideKept(t *testing.T, e *attackEnv) {
	t.Helper()
	b := e.mustReq(t, http.StatusOK, `"quota.wharf.dev/max-child-workspaces":"2"`, "mallory", http.MethodGet, "/clusters/{malloryHome}"+wsAPI+"/r24-g", "", "")
	for _, s := range []string{`"quota.wharf.dev/max-child-workspaces":"1000"`, `"quota.wharf.dev/max-tenant-bytes"`, `"quota.wharf.dev/max-bytes"`, `"quota.wharf.dev/max-objects"`} {
		if strings.Contains(b, s) {
			t.Errorf("r24-g holds %q: %s", s, b)
		}
	}
	if got := r24Usage(t, e, e.vars["malloryHome"]+":r24-g").Workspace.Limits.Workspaces; got != 2 {
		t.Errorf("r24-g's child ceiling in force: %d, want the hub admin's 2", got)
	}
}

func r24QuotaRows() []r24Row {
	wsPath := "/clusters/{malloryHome}" + wsAPI
	return []r24Row{
		{id: "r24:1", what: "resource requests of every verb at a hidden workspace and a missing one", run: func(t *testing.T, e *attackEnv) {
			r24Same(t, e, "1", resourceProbes)
		}},
		{id: "r24:2", what: "discovery, openapi and version at a hidden workspace and a missing one", run: func(t *testing.T, e *attackEnv) {
			r24Same(t, e, "2", discoveryProbes)
		}},
		{id: "r24:4", what: "the usage endpoint at a hidden workspace and a missing one", run: func(t *testing.T, e *attackEnv) {
			r24Same(t, e, "4", []oracleProbe{{name: "usage", method: http.MethodGet, path: "/clusters/{T}/api/usage"}})
		}},
		{id: "r24:6", what: "root's usage, which every person may discover around", run: func(t *testing.T, e *attackEnv) {
			const denied = "reading usage requires listing resourcequotas in the workspace"
			r24Steps(t, e, r24Vars(e, "6"),
				step{as: "mallory", method: http.MethodGet, path: "/clusters/root/api/usage", want: http.StatusForbidden, has: denied},
				step{as: "mallory", method: http.MethodGet, path: "/api/usage", want: http.StatusForbidden, has: denied},
				step{as: "victor", method: http.MethodGet, path: "/clusters/root/api/usage", want: http.StatusForbidden, has: denied},
				step{as: "hubadmin", method: http.MethodGet, path: "/clusters/root/api/usage", want: http.StatusOK, has: `"tenant":`})
		}},
		{id: "r24:5", what: "create a Workspace carrying quota annotations: POST, dry run, YAML, by id, server-side apply", run: func(t *testing.T, e *attackEnv) {
			yml := "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: r24-g\n  annotations:\n    quota.wharf.dev/max-objects: \"1000000\"\n"
			r24Steps(t, e, r24Vars(e, "5"),
				step{as: "mallory", method: http.MethodPost, path: wsPath, body: r24RaisedWS("r24-g"), want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPost, path: wsPath + "?dryRun=All", body: r24RaisedWS("r24-g"), want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPost, path: wsPath, ctype: "application/yaml", body: yml, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPost, path: "/clusters/{malloryID}" + wsAPI, body: r24RaisedWS("r24-g"), want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: wsPath + "/r24-g?fieldManager=m", ctype: "application/apply-patch+yaml", body: r24RaisedWS("r24-g"), want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: wsPath + "/r24-g?fieldManager=m&dryRun=All", ctype: "application/apply-patch+yaml", body: yml, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodGet, path: wsPath + "/r24-g", want: http.StatusNotFound})
		}},
		{id: "r24:7", what: "raise or drop the hub admin's override by merge, strategic and JSON patch and by apply", run: func(t *testing.T, e *attackEnv) {
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, wsPath, "", childWS("r24-g"))
			e.mustReq(t, http.StatusOK, "", "hubadmin", http.MethodPatch, wsPath+"/r24-g", "application/merge-patch+json",
				`{"metadata":{"annotations":{"quota.wharf.dev/max-child-workspaces":"2"}}}`)
			raise := `{"metadata":{"annotations":` + r24Raise + `}}`
			g := wsPath + "/r24-g"
			r24Steps(t, e, r24Vars(e, "7"),
				step{as: "mallory", method: http.MethodPatch, path: g, body: raise, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: g + "?dryRun=All", body: raise, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: g, ctype: "application/strategic-merge-patch+json", body: raise, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: g, ctype: "application/json-patch+json",
					body: `[{"op":"replace","path":"/metadata/annotations/quota.wharf.dev~1max-child-workspaces","value":"1000"}]`, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: g, ctype: "application/json-patch+json",
					body: `[{"op":"remove","path":"/metadata/annotations"}]`, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: g, body: `{"metadata":{"annotations":{"quota.wharf.dev/max-child-workspaces":null}}}`, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPatch, path: g + "?fieldManager=m&force=true", ctype: "application/apply-patch+yaml", body: r24RaisedWS("r24-g"), want: http.StatusForbidden, has: r24Denied})
			r24OverrideKept(t, e)
		}},
		{id: "r24:8", what: "PUT with the override raised or removed, and writes of the status subresource", run: func(t *testing.T, e *attackEnv) {
			g := wsPath + "/r24-g"
			cur := e.mustReq(t, http.StatusOK, `"annotations":{`, "mallory", http.MethodGet, g, "", "")
			raised := strings.Replace(cur, `"annotations":{`, `"annotations":{"quota.wharf.dev/max-bytes":"99999999999",`, 1)
			dropped := strings.Replace(cur, `"quota.wharf.dev/max-child-workspaces":"2"`, `"example.com/x":"y"`, 1)
			r24Steps(t, e, r24Vars(e, "8"),
				step{as: "mallory", method: http.MethodPut, path: g, body: raised, want: http.StatusForbidden, has: r24Denied},
				step{as: "mallory", method: http.MethodPut, path: g, body: dropped, want: http.StatusForbidden, has: r24Denied},
				// Status is the hub's: the subresource is read-only.
				step{as: "mallory", method: http.MethodPut, path: g + "/status", body: raised, want: http.StatusMethodNotAllowed},
				step{as: "mallory", method: http.MethodPatch, path: g + "/status", body: `{"metadata":{"annotations":` + r24Raise + `}}`, want: http.StatusMethodNotAllowed},
				step{as: "mallory", method: http.MethodPatch, path: g + "/status?fieldManager=m&force=true", ctype: "application/apply-patch+yaml", body: r24RaisedWS("r24-g"), want: http.StatusMethodNotAllowed})
			r24OverrideKept(t, e)
		}},
		{id: "r24:9", what: "quota annotation keys in other letter case", run: func(t *testing.T, e *attackEnv) {
			g := wsPath + "/r24-g"
			// The guard and the ceilings read the lower-case prefix
			// only. A key differing in the name part is the guard's; one
			// differing in the prefix is a valid key of another prefix
			// (validation lower-cases keys), which the hub may keep, but
			// which must raise nothing.
			e.mustReq(t, http.StatusForbidden, r24Denied, "mallory", http.MethodPatch, g, "application/merge-patch+json",
				`{"metadata":{"annotations":{"quota.wharf.dev/Max-Child-Workspaces":"1000"}}}`)
			for _, key := range []string{"Quota.Wharf.Dev/max-child-workspaces", "QUOTA.WHARF.DEV/max-child-workspaces", "Quota.wharf.dev/max-tenant-workspaces"} {
				code, b := e.req("mallory", http.MethodPatch, g, "application/merge-patch+json", fmt.Sprintf(`{"metadata":{"annotations":{%q:"1000"}}}`, key))
				if code != http.StatusOK && !(code == http.StatusForbidden && strings.Contains(b, r24Denied)) {
					t.Errorf("%s: %d %s", key, code, b)
				}
				t.Logf("%s: %d", key, code)
			}
			r24OverrideKept(t, e)
			r := r24Usage(t, e, e.vars["malloryHome"]+":r24-g")
			if r.Tenant.Limits.Workspaces != r24TenantWorkspaces {
				t.Errorf("mallory's tenant ceiling in force: %d, want the flag's %d", r.Tenant.Limits.Workspaces, r24TenantWorkspaces)
			}
			// And the ceiling bites: two children, not a third.
			sub := "/clusters/{malloryHome}:r24-g" + wsAPI
			eventually(t, 30*time.Second, func() error { // r24-g's admin binding reaches the authorizer
				if code, b := e.req("mallory", http.MethodPost, sub, "", childWS("x0")); code != http.StatusCreated {
					return fmt.Errorf("%d %s", code, b)
				}
				return nil
			})
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, sub, "", childWS("x1"))
			e.mustReq(t, http.StatusForbidden, "limited: count/workspaces.tenancy.wharf.dev=2", "mallory", http.MethodPost, sub, "", childWS("x2"))
		}},
		{id: "r24:10", what: "an identity impersonated in her home, then in victor's, and hub identities", run: func(t *testing.T, e *attackEnv) {
			asVictor := map[string]string{"Impersonate-User": "victor"}
			r24Steps(t, e, r24Vars(e, "10"),
				// Allowed in her home, where victor holds nothing.
				step{as: "mallory", method: http.MethodGet, path: cmPath("/clusters/{malloryHome}"), header: asVictor, want: http.StatusForbidden, has: `User \"victor\" cannot list resource`},
				step{as: "mallory", method: http.MethodGet, path: cmPath("/clusters/{victorHome}"), header: asVictor, want: http.StatusForbidden, has: `User \"mallory\" cannot impersonate`},
				step{as: "mallory", method: http.MethodGet, path: cmPath("/clusters/{victorID}"), header: asVictor, want: http.StatusForbidden, has: `User \"mallory\" cannot impersonate`},
				step{as: "mallory", method: http.MethodPost, path: cmPath("/clusters/{victorHome}"), body: cmJSON("imp-{n}"), header: asVictor, want: http.StatusForbidden},
				// No exempt identity can be borrowed to escape the limits:
				// an administrator's name, impersonated, is an ordinary
				// name of her home (review 5, #7).
				step{as: "mallory", method: http.MethodPost, path: cmPath("/clusters/{malloryHome}"), body: cmJSON("imp-{n}"), header: map[string]string{"Impersonate-User": "hubadmin"},
					want: http.StatusForbidden, has: `User \"hubadmin\" cannot create`},
				step{as: "mallory", method: http.MethodPost, path: cmPath("/clusters/{malloryHome}"), body: cmJSON("imp-{n}"), header: map[string]string{"Impersonate-User": "mallory", "Impersonate-Group": "system:masters"},
					want: http.StatusForbidden, has: "impersonating the system:masters group is not allowed"},
				step{as: "victor", method: http.MethodGet, path: cmPath("/clusters/{victorHome}") + "/imp-{n}", want: http.StatusNotFound})
		}},
		{id: "r24:11", what: "her service account's token outside her home", run: func(t *testing.T, e *attackEnv) {
			vars := r24Vars(e, "11")
			if err := mintToken(e, vars, "/clusters/{malloryHome}", "r24-sa", "mallory-sa"); err != nil {
				t.Fatal(err)
			}
			r24Steps(t, e, vars,
				step{as: "mallory-sa", method: http.MethodGet, path: cmPath("/clusters/{malloryHome}"), want: http.StatusOK},
				step{as: "mallory-sa", method: http.MethodGet, path: cmPath("/clusters/{victorHome}"), want: http.StatusForbidden},
				step{as: "mallory-sa", method: http.MethodGet, path: cmPath("/clusters/{victorID}"), want: http.StatusForbidden},
				step{as: "mallory-sa", method: http.MethodPost, path: cmPath("/clusters/{victorHome}"), body: cmJSON("sa-{n}"), want: http.StatusForbidden},
				step{as: "mallory-sa", method: http.MethodGet, path: "/clusters/*/api/v1/configmaps", want: http.StatusForbidden},
				step{as: "mallory-sa", method: http.MethodGet, path: cmPath(""), want: http.StatusForbidden},
				step{as: "mallory-sa", method: http.MethodGet, path: "/clusters/{victorHome}/api/usage", want: http.StatusForbidden})
		}},
		{id: "r24:12", what: "process-wide paths: metrics, profiles, flags, statusz", run: func(t *testing.T, e *attackEnv) {
			vars := r24Vars(e, "12")
			var steps []step
			for _, p := range append(processPaths, struct {
				path  string
				admin int
			}{"/debug/pprof/profile?seconds=1", 0}) {
				want := fmt.Sprintf(`cannot get path \"%s\"`, strings.Split(p.path, "?")[0])
				for _, prefix := range []string{"", "/clusters/{malloryHome}", "/clusters/{malloryID}"} {
					steps = append(steps, step{as: "mallory", method: http.MethodGet, path: prefix + p.path, want: http.StatusForbidden, has: want, hasNot: "# HELP"})
				}
				if _, ok := e.tokens["mallory-sa"]; ok { // minted by r24:11
					steps = append(steps, step{as: "mallory-sa", method: http.MethodGet, path: "/clusters/{malloryHome}" + p.path, want: http.StatusForbidden, hasNot: "# HELP"})
				}
			}
			steps = append(steps,
				step{as: "mallory", method: http.MethodPut, path: "/debug/flags/v", body: "9", ctype: "text/plain", want: http.StatusForbidden},
				step{as: "mallory", method: http.MethodPut, path: "/clusters/{malloryHome}/debug/flags/v", body: "9", ctype: "text/plain", want: http.StatusForbidden})
			r24Steps(t, e, vars, steps...)
			if err := logLevelUnchanged(e, vars); err != nil {
				t.Error(err)
			}
		}},
		{id: "r24:13", what: "20 concurrent creates into a workspace with room for 6 objects", run: func(t *testing.T, e *attackEnv) {
			const room, n = 6, 20
			if err := bobChild(e, "r24-objs", r24Vars(e, "13")); err != nil {
				t.Fatal(err)
			}
			ws := e.vars["malloryHome"] + ":r24-objs"
			lim := r24Settled(t, e, ws).Workspace.Used.Objects + room
			r24Override(t, e, "r24-objs", quota.AnnotationMaxObjects, lim, func(r quota.Report) int64 { return r.Workspace.Limits.Objects })
			ans := r24Burst(n, true, func(i int) (int, http.Header, string) {
				return r24Post(e, "mallory", cmPath("/clusters/"+ws), cmJSON(fmt.Sprintf("obj-%d", i)))
			})
			got, odd := r24Count(ans, fmt.Sprintf("exceeded quota: wharf-workspace-limits, requested: count/objects=1, used: count/objects=%d, limited: count/objects=%d", lim, lim),
				http.StatusCreated, http.StatusForbidden)
			if got[http.StatusCreated] != room || got[http.StatusForbidden] != n-room || len(odd) != 0 {
				t.Errorf("%d admitted, %d refused, want %d and %d; other answers: %v", got[201], got[403], room, n-room, odd)
			}
			if u := r24Usage(t, e, ws).Workspace.Used.Objects; u != lim {
				t.Errorf("objects used after the burst: %d, want the ceiling %d", u, lim)
			}
		}},
		{id: "r24:14", what: "10 concurrent child workspaces under a ceiling of 3", run: func(t *testing.T, e *attackEnv) {
			const n = 10
			if err := bobChild(e, "r24-kids", r24Vars(e, "14")); err != nil {
				t.Fatal(err)
			}
			r24Override(t, e, "r24-kids", quota.AnnotationMaxChildWorkspaces, 3, func(r quota.Report) int64 { return r.Workspace.Limits.Workspaces })
			kids := "/clusters/{malloryHome}:r24-kids" + wsAPI
			ans := r24Burst(n, true, func(i int) (int, http.Header, string) {
				return r24Post(e, "mallory", kids, childWS(fmt.Sprintf("k%d", i)))
			})
			got, odd := r24Count(ans, "exceeded quota: wharf-workspace-limits, requested: count/workspaces.tenancy.wharf.dev=1, used: count/workspaces.tenancy.wharf.dev=3, limited: count/workspaces.tenancy.wharf.dev=3",
				http.StatusCreated, http.StatusForbidden)
			if got[http.StatusCreated] != 3 || got[http.StatusForbidden] != n-3 || len(odd) != 0 {
				t.Errorf("%d admitted, %d refused, want 3 and %d; other answers: %v", got[201], got[403], n-3, odd)
			}
			if items := r24Items(t, e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, kids, "", "")); items != 3 {
				t.Errorf("%d child workspaces stored, want 3", items)
			}
		}},
		{id: "r24:16", what: "5 concurrent 900 kB ConfigMaps into a workspace with room for 2", run: func(t *testing.T, e *attackEnv) {
			const n = 5
			if err := bobChild(e, "r24-bytes", r24Vars(e, "16")); err != nil {
				t.Fatal(err)
			}
			ws := e.vars["malloryHome"] + ":r24-bytes"
			// 2 MB of room: two 900 kB objects fit, a third does not,
			// whatever the hub's own small writes do meanwhile.
			lim := r24Settled(t, e, ws).Workspace.Used.Bytes + 2_000_000
			r24Override(t, e, "r24-bytes", quota.AnnotationMaxBytes, lim, func(r quota.Report) int64 { return r.Workspace.Limits.Bytes })
			ans := r24Burst(n, true, func(i int) (int, http.Header, string) {
				return r24Post(e, "mallory", cmPath("/clusters/"+ws), bigConfigMap(fmt.Sprintf("big-%d", i)))
			})
			got, odd := r24Count(ans, fmt.Sprintf("limited: storage/bytes=%d", lim), http.StatusCreated, http.StatusForbidden)
			if got[http.StatusCreated] != 2 || got[http.StatusForbidden] != n-2 || len(odd) != 0 {
				t.Errorf("%d admitted, %d refused, want 2 and %d; other answers: %v", got[201], got[403], n-2, odd)
			}
			for _, a := range ans {
				if a.code == http.StatusForbidden && !strings.Contains(a.body, "exceeded quota: wharf-workspace-limits, requested: storage/bytes=") {
					t.Errorf("refusal: %.300s", a.body)
				}
			}
		}},
		{id: "r24:17", what: "5 concurrent 900 kB namespace status writes into a workspace with room for 2", run: func(t *testing.T, e *attackEnv) {
			const n = 5
			if err := bobChild(e, "r24-status", r24Vars(e, "17")); err != nil {
				t.Fatal(err)
			}
			ws := e.vars["malloryHome"] + ":r24-status"
			for i := 0; i < n; i++ {
				e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, "/clusters/"+ws+"/api/v1/namespaces", "", fmt.Sprintf(`{"metadata":{"name":"s%d"}}`, i))
			}
			lim := r24Settled(t, e, ws).Workspace.Used.Bytes + 2_000_000
			r24Override(t, e, "r24-status", quota.AnnotationMaxBytes, lim, func(r quota.Report) int64 { return r.Workspace.Limits.Bytes })
			big := fmt.Sprintf(`{"status":{"conditions":[{"type":"Big","status":"True","message":%q}]}}`, strings.Repeat("x", bigValue))
			ans := r24Burst(n, true, func(i int) (int, http.Header, string) {
				return e.sendFull(step{as: "mallory", method: http.MethodPatch, path: fmt.Sprintf("/clusters/%s/api/v1/namespaces/s%d/status", ws, i), body: big}, e.vars)
			})
			got, odd := r24Count(ans, fmt.Sprintf("limited: storage/bytes=%d", lim), http.StatusOK, http.StatusForbidden)
			if got[http.StatusOK] != 2 || got[http.StatusForbidden] != n-2 || len(odd) != 0 {
				t.Errorf("%d admitted, %d refused, want 2 and %d; other answers: %v", got[200], got[403], n-2, odd)
			}
			grown := 0
			for i := 0; i < n; i++ {
				if strings.Contains(e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, fmt.Sprintf("/clusters/%s/api/v1/namespaces/s%d", ws, i), "", ""), `"type":"Big"`) {
					grown++
				}
			}
			if grown != 2 {
				t.Errorf("%d namespaces hold the big status, want 2", grown)
			}
		}},
	}
}

// r24TenantRows come after every row that creates workspaces in
// mallory's tree: they use up her tenant's ceiling.
func r24TenantRows() []r24Row {
	return []r24Row{
		{id: "r24:15", what: "20 concurrent child workspaces against the tenant's ceiling", run: func(t *testing.T, e *attackEnv) {
			const n = 20
			r := r24Usage(t, e, e.vars["malloryHome"])
			lim, room := r.Tenant.Limits.Workspaces, r.Tenant.Limits.Workspaces-r.Tenant.Used.Workspaces
			if lim != r24TenantWorkspaces || room < 1 || room >= n {
				t.Fatalf("mallory's tenant: %+v, ceiling %d: no room to test with %d", r.Tenant.Used, lim, n)
			}
			ans := r24Burst(n, true, func(i int) (int, http.Header, string) {
				return r24Post(e, "mallory", "/clusters/{malloryHome}"+wsAPI, childWS(fmt.Sprintf("t%d", i)))
			})
			got, odd := r24Count(ans, fmt.Sprintf("exceeded quota: wharf-tenant-limits, requested: count/workspaces.tenancy.wharf.dev=1, used: count/workspaces.tenancy.wharf.dev=%d, limited: count/workspaces.tenancy.wharf.dev=%d", lim, lim),
				http.StatusCreated, http.StatusForbidden)
			if int64(got[http.StatusCreated]) != room || int64(got[http.StatusForbidden]) != n-room || len(odd) != 0 {
				t.Errorf("%d admitted, %d refused, want %d and %d; other answers: %v", got[201], got[403], room, n-room, odd)
			}
			if u := r24Usage(t, e, e.vars["malloryHome"]).Tenant.Used.Workspaces; u != lim {
				t.Errorf("tenant workspaces after the burst: %d, want the ceiling %d", u, lim)
			}
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, "/clusters/{victorHome}"+wsAPI, "", childWS("r24-fine"))
		}},
	}
}
