package hub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/quota"
)

// Rows r24b (attack_review24b_test.go) about ceilings and bodies: racing
// creates, writes that do not grow usage at a ceiling, churn at a ceiling,
// a JSON patch past upstream's operation bound, and bodies too deep or too
// wide for a custom resource.

// r24bNotes is the custom resource of r24b:46 and r24b:48, made hub-wide
// by the hub admin as the README says only hub admins may.
const r24bNotesCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"notes.r24b.example.com"},"spec":{"group":"r24b.example.com","scope":"Namespaced",` +
	`"names":{"plural":"notes","singular":"note","kind":"Note"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{` +
	`"spec":{"type":"object","properties":{"message":{"type":"string"}}}}}}}]}}`

func r24bNote(name, spec string) string {
	return fmt.Sprintf(`{"apiVersion":"r24b.example.com/v1","kind":"Note","metadata":{"name":%q},"spec":%s}`, name, spec)
}

func r24bLimitRows() []r24Row {
	home := "/clusters/{malloryHome}"
	kids := home + wsAPI
	quotaWS := func(used int) string {
		return fmt.Sprintf("exceeded quota: wharf-workspace-limits, requested: count/workspaces.tenancy.wharf.dev=1, used: count/workspaces.tenancy.wharf.dev=%d, limited: count/workspaces.tenancy.wharf.dev=%d", used, used)
	}
	return []r24Row{
		{id: "r24b:19", what: "status, update and finalizer writes at the object ceiling", run: func(t *testing.T, e *attackEnv) {
			if err := bobChild(e, "r24b-fin", r24bVars(e, "19")); err != nil {
				t.Fatal(err)
			}
			ws := e.vars["malloryHome"] + ":r24b-fin"
			cms := cmPath("/clusters/" + ws)
			lim := r24Settled(t, e, ws).Workspace.Used.Objects + 2
			r24Override(t, e, "r24b-fin", quota.AnnotationMaxObjects, lim, func(r quota.Report) int64 { return r.Workspace.Limits.Objects })
			over := fmt.Sprintf("exceeded quota: wharf-workspace-limits, requested: count/objects=1, used: count/objects=%d, limited: count/objects=%d", lim, lim)
			r24Steps(t, e, r24bVars(e, "19"),
				step{as: "mallory", method: http.MethodPost, path: cms, body: cmJSON("a"), want: http.StatusCreated},
				step{as: "mallory", method: http.MethodPost, path: cms, body: cmJSON("b"), want: http.StatusCreated},
				step{as: "mallory", method: http.MethodPost, path: cms, body: cmJSON("c"), want: http.StatusForbidden, has: over},
				// At the ceiling, writes that add no object are admitted.
				step{as: "mallory", method: http.MethodPatch, path: cms + "/a", body: `{"metadata":{"finalizers":["example.com/hold"]},"data":{"k":"v"}}`, want: http.StatusOK},
				step{as: "mallory", method: http.MethodPatch, path: "/clusters/" + ws + "/api/v1/namespaces/default/status",
					body: `{"status":{"conditions":[{"type":"R24b","status":"True","reason":"Limit","message":"at the ceiling"}]}}`, want: http.StatusOK},
				step{as: "mallory", method: http.MethodDelete, path: cms + "/a", want: http.StatusOK, has: `"deletionTimestamp"`},
				// Held by its finalizer, a still counts.
				step{as: "mallory", method: http.MethodPost, path: cms, body: cmJSON("c"), want: http.StatusForbidden, has: over},
				step{as: "mallory", method: http.MethodPatch, path: cms + "/a", body: `{"metadata":{"finalizers":null}}`, want: http.StatusOK})
			eventually(t, 30*time.Second, func() error {
				if code, b := e.req("mallory", http.MethodPost, cms, "", cmJSON("c")); code != http.StatusCreated {
					return fmt.Errorf("create once a is gone: %d %.200s", code, b)
				}
				return nil
			})
			e.mustReq(t, http.StatusNotFound, "", "mallory", http.MethodGet, cms+"/a", "", "")
			if u := r24Usage(t, e, ws).Workspace.Used.Objects; u != lim {
				t.Errorf("objects used: %d, want the ceiling %d", u, lim)
			}
		}},
		{id: "r24b:18", what: "12 concurrent child workspaces against the flag's ceiling", run: func(t *testing.T, e *attackEnv) {
			const n = 12
			r := r24Usage(t, e, e.vars["malloryHome"])
			lim, room := r.Workspace.Limits.Workspaces, r.Workspace.Limits.Workspaces-r.Workspace.Used.Workspaces
			if lim != r24bChildWorkspaces || room < 1 || room >= n {
				t.Fatalf("mallory's home: %+v, ceiling %d: no room to test with %d", r.Workspace.Used, lim, n)
			}
			ans := r24Burst(n, true, func(i int) (int, http.Header, string) {
				return r24Post(e, "mallory", kids, childWS(fmt.Sprintf("race-%d", i)))
			})
			got, odd := r24Count(ans, quotaWS(r24bChildWorkspaces), http.StatusCreated, http.StatusForbidden)
			if int64(got[http.StatusCreated]) != room || int64(got[http.StatusForbidden]) != n-room || len(odd) != 0 {
				t.Errorf("%d admitted, %d refused, want %d and %d; other answers: %v", got[201], got[403], room, n-room, odd)
			}
			if items := r24Items(t, e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, kids, "", "")); items != r24bChildWorkspaces {
				t.Errorf("%d child workspaces stored, want %d", items, r24bChildWorkspaces)
			}
		}},
		{id: "r24b:41", what: "create and delete churn of child workspaces at the ceiling", run: func(t *testing.T, e *attackEnv) {
			for i := 0; i < 15; i++ {
				name := fmt.Sprintf("churn-%d", i)
				e.mustReq(t, http.StatusForbidden, quotaWS(r24bChildWorkspaces), "mallory", http.MethodPost, kids, "", childWS(name))
				e.mustReq(t, http.StatusNotFound, "", "mallory", http.MethodDelete, kids+"/"+name, "", "")
			}
			if items := r24Items(t, e.mustReq(t, http.StatusOK, "", "mallory", http.MethodGet, kids, "", "")); items != r24bChildWorkspaces {
				t.Errorf("%d child workspaces stored, want %d", items, r24bChildWorkspaces)
			}
			if u := r24Usage(t, e, e.vars["malloryHome"]).Workspace.Used.Workspaces; u != r24bChildWorkspaces {
				t.Errorf("child workspaces counted: %d, want %d", u, r24bChildWorkspaces)
			}
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, "/clusters/{victorHome}"+wsAPI, "", childWS("r24b-fine"))
		}},
		{id: "r24b:43", what: "aggregated ClusterRoles relabelled in a loop while victor aggregates his", run: func(t *testing.T, e *attackEnv) {
			crs := home + "/apis/rbac.authorization.k8s.io/v1/clusterroles"
			for i := 0; i < 10; i++ {
				e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, crs, "",
					fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r24b-agg-%d"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"agg":"x"}}]}}`, i))
			}
			for i := 0; i < 20; i++ {
				e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, crs, "",
					fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r24b-part-%d","labels":{"agg":"x"}},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"],"resourceNames":["n%d"]}]}`, i, i))
			}
			// Her churn runs until victor's aggregate is written back.
			stop := make(chan struct{})
			codes := make(chan map[int]int, 4)
			for k := 0; k < 4; k++ {
				go func() {
					got := map[int]int{}
					defer func() { codes <- got }()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						label := map[bool]string{true: "x", false: "y"}[n%2 == 0]
						code, _ := e.req("mallory", http.MethodPatch, fmt.Sprintf("%s/r24b-part-%d", crs, (k*5+n)%20), "application/merge-patch+json",
							fmt.Sprintf(`{"metadata":{"labels":{"agg":%q}}}`, label))
						got[code]++
					}
				}()
			}
			vcrs := "/clusters/{victorHome}/apis/rbac.authorization.k8s.io/v1/clusterroles"
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, vcrs, "",
				`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r24b-vagg"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"vagg":"x"}}]}}`)
			e.mustReq(t, http.StatusCreated, "", "victor", http.MethodPost, vcrs, "",
				`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r24b-vpart","labels":{"vagg":"x"}},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["list"]}]}`)
			err := waitFor(2*time.Minute, func() error { // bounds a starved write-back only
				if b := e.mustReq(t, http.StatusOK, "", "victor", http.MethodGet, vcrs+"/r24b-vagg", "", ""); !strings.Contains(b, `"resources":["secrets"]`) {
					return fmt.Errorf("victor's aggregate not written back while her churn runs: %.300s", b)
				}
				return nil
			})
			close(stop)
			total := map[int]int{}
			for k := 0; k < 4; k++ {
				for c, n := range <-codes {
					total[c] += n
				}
			}
			t.Logf("her relabels while victor's aggregate was written back: %v", total)
			if err != nil {
				t.Error(err)
			}
			for c := range total {
				if c != http.StatusOK && c != http.StatusTooManyRequests {
					t.Errorf("her relabels answered %d (%v)", c, total)
				}
			}
			if total[http.StatusOK] == 0 {
				t.Errorf("none of her relabels was applied: %v", total)
			}
		}},
		{id: "r24b:38", what: "a JSON patch of 10,001 operations", run: func(t *testing.T, e *attackEnv) {
			cms := cmPath(home)
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, cms, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24b-jp"},"data":{"k":"small"}}`)
			ops := func(n int) string {
				var b strings.Builder
				b.WriteString(`[{"op":"replace","path":"/data/k","value":"patched"}`)
				for i := 1; i < n; i++ {
					b.WriteString(`,{"op":"test","path":"/metadata/name","value":"r24b-jp"}`)
				}
				b.WriteString("]")
				return b.String()
			}
			r24Steps(t, e, r24bVars(e, "38"),
				step{as: "mallory", method: http.MethodPatch, path: cms + "/r24b-jp", ctype: "application/json-patch+json", body: ops(10001),
					want: http.StatusRequestEntityTooLarge, has: "The allowed maximum operations in a JSON patch is 10000, got 10001"},
				step{as: "mallory", method: http.MethodPatch, path: cms + "/r24b-jp?dryRun=All", ctype: "application/json-patch+json", body: ops(10001),
					want: http.StatusRequestEntityTooLarge},
				step{as: "mallory", method: http.MethodGet, path: cms + "/r24b-jp", want: http.StatusOK, has: `"k":"small"`},
				// Upstream's bound, not a lower one: 10,000 operations apply.
				step{as: "mallory", method: http.MethodPatch, path: cms + "/r24b-jp", ctype: "application/json-patch+json", body: ops(10000), want: http.StatusOK, has: `"k":"patched"`})
			r24VictorOK(t, e, "jsonpatch", 4)
		}},
		{id: "r24b:46", what: "bodies nested 100,000 deep, into a custom resource and a ConfigMap", run: func(t *testing.T, e *attackEnv) {
			r24bNotes(t, e)
			deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
			notes := home + "/apis/r24b.example.com/v1/namespaces/default/notes"
			for _, s := range []struct{ what, method, path, ctype, body string }{
				{"create Note", http.MethodPost, notes, "", r24bNote("deep", `{"x":`+deep+`}`)},
				{"create Note (YAML)", http.MethodPost, notes, "application/yaml", "apiVersion: r24b.example.com/v1\nkind: Note\nmetadata: {name: deep}\nspec: {x: " + deep + "}\n"},
				{"apply Note", http.MethodPatch, notes + "/deep?fieldManager=m", "application/apply-patch+yaml", r24bNote("deep", `{"x":`+deep+`}`)},
				{"create ConfigMap", http.MethodPost, cmPath(home), "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r24b-deep"},"x":` + deep + `}`},
			} {
				code, b := e.req("mallory", s.method, s.path, s.ctype, s.body)
				if code != http.StatusBadRequest || !strings.Contains(b, `"reason":"BadRequest"`) {
					t.Errorf("%s: %d %.300s, want 400 BadRequest", s.what, code, b)
				}
			}
			e.mustReq(t, http.StatusNotFound, "", "mallory", http.MethodGet, notes+"/deep", "", "")
			e.mustReq(t, http.StatusNotFound, "", "mallory", http.MethodGet, cmPath(home)+"/r24b-deep", "", "")
			r24VictorOK(t, e, "deep", 4)
		}},
		{id: "r24b:48", what: "a custom resource with 60,000 fields its schema does not know", run: func(t *testing.T, e *attackEnv) {
			r24bNotes(t, e)
			var b strings.Builder
			b.WriteString(`{"message":"hi","x":[`)
			for i := 0; i < 60000; i++ {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"a%d":%d}`, i, i)
			}
			b.WriteString("]}")
			notes := home + "/apis/r24b.example.com/v1/namespaces/default/notes"
			e.mustReq(t, http.StatusCreated, "", "mallory", http.MethodPost, notes, "", r24bNote("wide", b.String()))
			got := e.mustReq(t, http.StatusOK, `"message":"hi"`, "mallory", http.MethodGet, notes+"/wide", "", "")
			if strings.Contains(got, `"a0"`) || len(got) > 10000 {
				t.Errorf("the unknown fields were stored (%d bytes): %.300s", len(got), got)
			}
		}},
	}
}

// r24bNotes has the hub admin install the Note CRD once and waits until
// mallory's home serves it.
func r24bNotes(t *testing.T, e *attackEnv) {
	t.Helper()
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	if code, _ := e.req("admin", http.MethodGet, crds+"/notes.r24b.example.com", "", ""); code == http.StatusNotFound {
		e.mustReq(t, http.StatusCreated, "", "admin", http.MethodPost, crds, "", r24bNotesCRD)
	}
	eventually(t, 60*time.Second, func() error {
		if code, b := e.req("mallory", http.MethodGet, "/clusters/{malloryHome}/apis/r24b.example.com/v1/namespaces/default/notes", "", ""); code != http.StatusOK {
			return fmt.Errorf("notes in her home: %d %.200s", code, b)
		}
		return nil
	})
}
