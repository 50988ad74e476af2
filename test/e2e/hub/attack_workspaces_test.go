package hub

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Workspace attacks (issue 11, findings 2 and 4): bob, admin of his home,
// tries to point the hub's workspace state (status, which drove deletion
// and orphan collection; allocation, which server-side apply skipped) at
// alice's home or at root. The defence: status is written only by the hub,
// deletion and orphan collection follow the hub's index, and every create
// path allocates the same way.
func init() {
	registerAttacks(
		attack{finding: "11.2", name: "status subresource refuses every client write, by path and by id",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := victims(e, vars); err != nil {
					return err
				}
				return bobChild(e, "st-{n}", vars)
			},
			steps: append(append(statusWrites("bob", "/clusters/{bobHome}", "st-{n}"), statusWrites("bob", "/clusters/{bobID}", "st-{n}")...),
				// No identity may write it: hub admins get the same answer.
				step{as: "admin", method: http.MethodPatch, path: wsAPI + "/users/status?dryRun=All", body: statusPatch("{aliceID}", "{aliceHome}"),
					want: http.StatusMethodNotAllowed, has: "MethodNotAllowed"},
				// bob is not admin of root: refused before the method.
				step{as: "bob", method: http.MethodPatch, path: wsAPI + "/users/status", body: statusPatch("{aliceID}", "{aliceHome}"), want: http.StatusForbidden},
				step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + wsAPI + "/st-{n}/status", want: http.StatusOK,
					has: `"path":"{bobHome}:st-{n}"`, hasNot: "{aliceID}"},
				step{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "/st-{n}", want: http.StatusOK}),
			after: func(e *attackEnv, vars map[string]string) error {
				if err := waitGone(e, "st-{n}", vars); err != nil {
					return err
				}
				return victimsSurvive(e, vars)
			}},
		attack{finding: "11.2", name: "main resource writes keep status and the cleanup finalizer",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := victims(e, vars); err != nil {
					return err
				}
				return bobChild(e, "mr-{n}", vars)
			},
			steps: append(append(mainWrites("/clusters/{bobHome}", "mr-{n}"), mainWrites("/clusters/{bobID}", "mr-{n}")...),
				step{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "/mr-{n}", want: http.StatusOK}),
			after: func(e *attackEnv, vars map[string]string) error {
				if err := waitGone(e, "mr-{n}", vars); err != nil {
					return err
				}
				return victimsSurvive(e, vars)
			}},
		tamperedDelete("stored status names alice's home, delete by path", "{aliceID}", "{aliceHome}", "/clusters/{bobHome}"),
		tamperedDelete("stored status names root, delete by id", "{rootID}", "root", "/clusters/{bobID}"),
		attack{finding: "11.2", name: "deletecollection of children whose stored status names alice's home and root",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := victims(e, vars); err != nil {
					return err
				}
				for _, c := range [][3]string{{"dca-{n}", "{aliceID}", "{aliceHome}"}, {"dcr-{n}", "{rootID}", "root"}} {
					if err := bobChild(e, c[0], vars); err != nil {
						return err
					}
					if err := tamperEtcd(e, c[0], c[1], c[2], vars); err != nil {
						return err
					}
				}
				return nil
			},
			steps: []step{
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "?labelSelector=row%3D{n}&dryRun=All", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + wsAPI + "/dca-{n}", want: http.StatusOK, hasNot: "deletionTimestamp"},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "?labelSelector=row%3D{n}", want: http.StatusOK},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				for _, name := range []string{"dca-{n}", "dcr-{n}"} {
					if err := waitGone(e, name, vars); err != nil {
						return err
					}
				}
				return victimsSurvive(e, vars)
			}},
		attack{finding: "11.2", name: "orphan collection leaves a child whose stored status names alice's home",
			before: func(e *attackEnv, vars map[string]string) error {
				if err := victims(e, vars); err != nil {
					return err
				}
				if err := bobChild(e, "live-{n}", vars); err != nil {
					return err
				}
				// The collector spares allocations younger than its grace;
				// this child must look as old as any long-lived one.
				if err := ageAllocation(e, "live-{n}", vars); err != nil {
					return err
				}
				if err := tamperEtcd(e, "live-{n}", "{aliceID}", "{aliceHome}", vars); err != nil {
					return err
				}
				// A real orphan beside it: the collector has run once it is gone.
				return plantOrphan(e, vars)
			},
			steps: []step{{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}:live-{n}/api/v1/namespaces/default/configmaps/inside", want: http.StatusOK}},
			after: func(e *attackEnv, vars map[string]string) error {
				if err := waitFor(150*time.Second, func() error {
					if left := keysContaining(e.t, e.etcd, vars["ghost"]); len(left) > 0 {
						return fmt.Errorf("orphan collector has not run: %v", left)
					}
					return nil
				}); err != nil {
					return err
				}
				if err := e.wantAs(http.StatusOK, "bob", http.MethodGet, "/clusters/{bobHome}:live-{n}/api/v1/namespaces/default/configmaps/inside", "", vars); err != nil {
					return fmt.Errorf("live workspace collected: %w", err)
				}
				if err := victimsSurvive(e, vars); err != nil {
					return err
				}
				if err := e.wantAs(http.StatusOK, "bob", http.MethodDelete, "/clusters/{bobHome}"+wsAPI+"/live-{n}", "", vars); err != nil {
					return err
				}
				return waitGone(e, "live-{n}", vars)
			}},
		attack{finding: "11.2", name: "names that make odd paths or squat a cluster id; rename and re-annotate",
			before: func(e *attackEnv, vars map[string]string) error { return bobChild(e, "nm-{n}", vars) },
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI, body: wsJSON("a:b", "", ""), want: http.StatusUnprocessableEntity, has: "Invalid"},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI, body: wsJSON("*", "", ""), want: http.StatusUnprocessableEntity},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI, body: wsJSON("Root", "", ""), want: http.StatusUnprocessableEntity},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/a:b?fieldManager=bob", ctype: "application/apply-patch+yaml",
					body: wsJSON("a:b", "", ""), want: http.StatusUnprocessableEntity},
				// A child named like alice's cluster id is only a path
				// segment of bob's home; the id still means alice's home.
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI, body: wsJSON("{aliceID}", "", ""), want: http.StatusCreated,
					has: `"path":"{bobHome}:{aliceID}"`},
				{as: "bob", method: http.MethodGet, path: "/clusters/{aliceID}/api/v1/namespaces/default/configmaps", want: http.StatusForbidden},
				{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}" + wsAPI + "/nm-{n}", body: wsJSON("other-{n}", "", ""), want: http.StatusBadRequest},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/nm-{n}", body: `{"metadata":{"annotations":{"wharf.dev/cluster":"{aliceID}"}}}`,
					want: http.StatusOK, has: `"wharf.dev/cluster":"{bobID}"`, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "/nm-{n}", want: http.StatusOK},
				{as: "bob", method: http.MethodDelete, path: "/clusters/{bobHome}" + wsAPI + "/{aliceID}", want: http.StatusOK},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				for _, name := range []string{"nm-{n}", "{aliceID}"} {
					if err := waitGone(e, name, vars); err != nil {
						return err
					}
				}
				return e.wantAs(http.StatusOK, "alice", http.MethodGet, "/clusters/{aliceID}/api/v1/namespaces/default", "", vars)
			}},
	)
	registerAttacks(createRows()...)
}

// statusWrites are every client write of workspaces/status, real and dry
// run, naming alice's home and root: each answers 405, because no client
// may write status.
func statusWrites(as, prefix, name string) []step {
	base := prefix + wsAPI + "/" + name + "/status"
	var out []step
	for _, target := range [][2]string{{"{aliceID}", "{aliceHome}"}, {"{rootID}", "root"}} {
		for _, q := range []string{"?fieldManager=bob", "?fieldManager=bob&dryRun=All"} {
			writes := []step{
				{method: http.MethodPatch, body: statusPatch(target[0], target[1])},
				{method: http.MethodPatch, ctype: "application/json-patch+json",
					body: fmt.Sprintf(`[{"op":"replace","path":"/status","value":{"cluster":%q,"path":%q}}]`, target[0], target[1])},
				{method: http.MethodPatch, ctype: "application/strategic-merge-patch+json", body: statusPatch(target[0], target[1])},
				{method: http.MethodPatch, ctype: "application/apply-patch+yaml", body: wsJSON(name, target[0], target[1])},
				{method: http.MethodPatch, ctype: "application/apply-patch+yaml", body: wsJSON(name, target[0], target[1]), path: "&force=true"},
				{method: http.MethodPut, body: wsJSON(name, target[0], target[1])},
			}
			for _, w := range writes {
				w.as, w.path = as, base+q+w.path
				w.want, w.has = http.StatusMethodNotAllowed, "MethodNotAllowed"
				// Twice: a repeat inside any cache lifetime answers the same.
				out = append(out, w, w)
			}
		}
	}
	return out
}

// mainWrites are client writes of the main resource carrying a status
// that names alice's home, and one that drops the cleanup finalizer:
// accepted, with status and finalizer left as the hub set them.
func mainWrites(prefix, name string) []step {
	url := prefix + wsAPI + "/" + name
	keep := `"path":"{bobHome}:` + name + `"`
	var out []step
	for _, q := range []string{"?fieldManager=bob", "?fieldManager=bob&dryRun=All"} {
		for _, w := range []step{
			{method: http.MethodPatch, body: statusPatch("{aliceID}", "{aliceHome}")},
			{method: http.MethodPatch, ctype: "application/json-patch+json", body: `[{"op":"replace","path":"/status","value":{"cluster":"{aliceID}","path":"{aliceHome}"}}]`},
			{method: http.MethodPatch, ctype: "application/apply-patch+yaml", body: wsJSON(name, "{aliceID}", "{aliceHome}"), path: "&force=true"},
			{method: http.MethodPut, body: wsJSON(name, "{aliceID}", "{aliceHome}")},
			{method: http.MethodPatch, ctype: "application/json-patch+json", body: `[{"op":"remove","path":"/metadata/finalizers"}]`, has: "tenancy.wharf.dev/cleanup"},
		} {
			w.as, w.path, w.want, w.hasNot = "bob", url+q+w.path, http.StatusOK, "{aliceID}"
			if w.has == "" {
				w.has = keep
			}
			out = append(out, w)
		}
	}
	return out
}

// tamperedDelete is bob deleting his child after its stored status was
// made to name cluster and path.
func tamperedDelete(name, cluster, path, prefix string) attack {
	return attack{finding: "11.2", name: name,
		before: func(e *attackEnv, vars map[string]string) error {
			if err := victims(e, vars); err != nil {
				return err
			}
			if err := bobChild(e, "del-{n}", vars); err != nil {
				return err
			}
			return tamperEtcd(e, "del-{n}", cluster, path, vars)
		},
		steps: []step{{as: "bob", method: http.MethodDelete, path: prefix + wsAPI + "/del-{n}", want: http.StatusOK}},
		after: func(e *attackEnv, vars map[string]string) error {
			if err := waitGone(e, "del-{n}", vars); err != nil {
				return err
			}
			return victimsSurvive(e, vars)
		}}
}

// plantOrphan writes a logical cluster allocated long ago under bob's home
// whose Workspace was never stored, as a hub that died mid-create leaves.
func plantOrphan(e *attackEnv, vars map[string]string) error {
	id := "ghost" + strings.Repeat("0", 11-len(vars["n"])) + vars["n"]
	vars["ghost"] = id
	path := expand("{bobHome}:ghost-{n}", vars)
	for k, v := range map[string]string{
		"/registry/wharf.dev/workspacepaths/" + path: id,
		"/registry/wharf.dev/logicalclusters/" + id:  `{"path":"` + path + `","allocated":"2020-01-01T00:00:00Z"}`,
	} {
		if _, err := e.etcd.Put(e.t.Context(), k, v); err != nil {
			return err
		}
	}
	return nil
}
