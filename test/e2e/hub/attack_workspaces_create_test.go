package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// createRows are issue 11 finding 4 for Workspaces: every write path
// creates a Workspace the same way. Server-side apply of a new Workspace
// creates it as POST does (cluster, finalizer, creator binding), and a dry
// run, of either, allocates and initializes nothing.
func createRows() []attack {
	apply := func(prefix, name string) step {
		return step{as: "bob", method: http.MethodPatch, path: prefix + wsAPI + "/" + name + "?fieldManager=bob", ctype: "application/apply-patch+yaml",
			body: wsJSON(name, "{aliceID}", "{aliceHome}"), want: http.StatusCreated,
			has: `"tenancy.wharf.dev/cleanup"`, hasNot: "{aliceID}"}
	}
	return []attack{
		{finding: "11.4", name: "server-side apply of a new workspace allocates it, by path and by id",
			before: victims,
			steps: []step{
				apply("/clusters/{bobHome}", "ssa-{n}"),
				apply("/clusters/{bobID}", "ssb-{n}"),
				// Re-applying updates it.
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + wsAPI + "/ssa-{n}?fieldManager=bob", ctype: "application/apply-patch+yaml",
					body: wsJSON("ssa-{n}", "{rootID}", "root"), want: http.StatusOK, has: `"path":"{bobHome}:ssa-{n}"`, hasNot: `"cluster":"{rootID}"`},
				// Applying in root needs create there, which bob lacks.
				{as: "bob", method: http.MethodPatch, path: wsAPI + "/ssr-{n}?fieldManager=bob", ctype: "application/apply-patch+yaml",
					body: wsJSON("ssr-{n}", "", ""), want: http.StatusForbidden},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				// What the creator gets: the default namespace, his admin
				// binding, and a stored cluster id.
				for _, name := range []string{"ssa-{n}", "ssb-{n}"} {
					if err := waitFor(30*time.Second, func() error {
						return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}:"+name+"/api/v1/namespaces/default/configmaps",
							`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"inside"}}`, vars)
					}); err != nil {
						return fmt.Errorf("applied workspace unusable: %w", err)
					}
					if code, body := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/"+name, "", vars); code != http.StatusOK || strings.Contains(body, `"cluster":""`) || !strings.Contains(body, `"cluster":"`) {
						return fmt.Errorf("applied workspace %s: %d %s", name, code, body)
					}
				}
				// The same through the real kubectl.
				ws := expand("{bobHome}", vars)
				manifest := expand("apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: kss-{n}\n", vars)
				if out, err := e.h.applyStdin(ws, manifest, "--token", "bob-token", "apply", "--server-side"); err != nil {
					return fmt.Errorf("kubectl apply --server-side: %v: %s", err, out)
				}
				if err := waitFor(30*time.Second, func() error {
					out, err := e.h.kubectl(ws+":"+expand("kss-{n}", vars), "--token", "bob-token", "get", "namespace", "default", "-o", "name")
					if err != nil || out != "namespace/default" {
						return fmt.Errorf("kubectl get namespace default in the applied workspace: %v: %s", err, out)
					}
					return nil
				}); err != nil {
					return err
				}
				for _, name := range []string{"ssa-{n}", "ssb-{n}", "kss-{n}"} {
					if err := e.wantAs(http.StatusOK, "bob", http.MethodDelete, "/clusters/{bobHome}"+wsAPI+"/"+name, "", vars); err != nil {
						return err
					}
					if err := waitGone(e, name, vars); err != nil {
						return err
					}
				}
				return victimsSurvive(e, vars)
			}},
		{finding: "11.4", name: "dry-run create and dry-run apply allocate nothing",
			before: func(e *attackEnv, vars map[string]string) error {
				vars["clusters"], vars["namespaces"] = countKeys(e, "/registry/wharf.dev/logicalclusters/"), countKeys(e, "/registry/core/namespaces/")
				return nil
			},
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI + "?dryRun=All", body: wsJSON("dry-{n}", "{aliceID}", "{aliceHome}"),
					want: http.StatusCreated, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobID}" + wsAPI + "/dry-{n}?fieldManager=bob&dryRun=All", ctype: "application/apply-patch+yaml",
					body: wsJSON("dry-{n}", "{aliceID}", "{aliceHome}"), want: http.StatusCreated, hasNot: "{aliceID}"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + wsAPI + "/dry-{n}", want: http.StatusNotFound},
				// Nothing squats the name: a second dry run of it is created too.
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + wsAPI + "?dryRun=All", body: wsJSON("dry-{n}", "", ""), want: http.StatusCreated},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				if left := keysContaining(e.t, e.etcd, "dry-"+vars["n"]); len(left) > 0 {
					return fmt.Errorf("dry run wrote %v", left)
				}
				for k, prefix := range map[string]string{"clusters": "/registry/wharf.dev/logicalclusters/", "namespaces": "/registry/core/namespaces/"} {
					if got := countKeys(e, prefix); got != vars[k] {
						return fmt.Errorf("dry run changed %s from %s to %s keys", prefix, vars[k], got)
					}
				}
				return nil
			}},
	}
}

func countKeys(e *attackEnv, prefix string) string {
	resp, err := e.etcd.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		e.t.Fatal(err)
	}
	return fmt.Sprint(resp.Count)
}
