package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Helpers of the workspace attack rows (attack_workspaces_test.go).

const wsAPI = "/apis/tenancy.wharf.dev/v1alpha1/workspaces"

// wsJSON is a Workspace named name whose status claims cluster and path.
func wsJSON(name, cluster, path string) string {
	return fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q,"labels":{"row":"{n}"}},"status":{"phase":"Ready","cluster":%q,"path":%q}}`,
		name, cluster, path)
}

// statusPatch is a merge patch of status naming cluster and path.
func statusPatch(cluster, path string) string {
	return fmt.Sprintf(`{"status":{"cluster":%q,"path":%q}}`, cluster, path)
}

// victims plants objects the rows must not be able to destroy: a
// ConfigMap in alice's home and one in root.
func victims(e *attackEnv, vars map[string]string) error {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim-{n}"},"data":{"k":"v"}}`
	if err := e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps", cm, vars); err != nil {
		return err
	}
	return e.wantAs(http.StatusCreated, "admin", http.MethodPost, "/api/v1/namespaces/default/configmaps", cm, vars)
}

// victimsSurvive checks, after the attacker's child is gone, that alice's
// home, root and root:users are whole: by path and by id.
func victimsSurvive(e *attackEnv, vars map[string]string) error {
	for _, c := range []struct{ who, path string }{
		{"alice", "/clusters/{aliceHome}/api/v1/namespaces/default/configmaps/victim-{n}"},
		{"alice", "/clusters/{aliceID}/api/v1/namespaces/default/configmaps/victim-{n}"},
		{"admin", "/api/v1/namespaces/default/configmaps/victim-{n}"},
		{"admin", "/clusters/{rootID}/api/v1/namespaces/kube-system"},
		{"admin", "/clusters/root" + wsAPI + "/users"},
		{"alice", "/clusters/{aliceHome}/api/v1/namespaces/default"},
	} {
		if err := e.wantAs(http.StatusOK, c.who, http.MethodGet, c.path, "", vars); err != nil {
			return fmt.Errorf("victim lost: %w", err)
		}
	}
	return nil
}

// waitGone waits until bob's child name is deleted and its path released.
func waitGone(e *attackEnv, name string, vars map[string]string) error {
	path := expand("{bobHome}:"+name, vars)
	return waitFor(90*time.Second, func() error {
		if code, body := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/"+name, "", vars); code != http.StatusNotFound {
			return fmt.Errorf("workspace %s still there: %d %s", path, code, body)
		}
		if left := keysContaining(e.t, e.etcd, "workspacepaths/"+path); len(left) > 0 {
			return fmt.Errorf("index still records %v", left)
		}
		return nil
	})
}

// tamperEtcd rewrites the stored status of bob's child name straight in
// etcd, where the API no longer lets anyone write it: what the deletion
// controller and the orphan collector do must not depend on it.
func tamperEtcd(e *attackEnv, name, cluster, path string, vars map[string]string) error {
	ctx := context.Background()
	key := expand("/registry/tenancy.wharf.dev/workspaces/{bobID}/"+name, vars)
	resp, err := e.etcd.Get(ctx, key)
	if err != nil {
		return err
	}
	if len(resp.Kvs) != 1 {
		return fmt.Errorf("no stored workspace at %s", key)
	}
	var obj map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &obj); err != nil {
		return fmt.Errorf("workspace at %s is not stored as JSON: %w", key, err)
	}
	obj["status"] = map[string]any{"phase": "Ready", "cluster": expand(cluster, vars), "path": expand(path, vars)}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if _, err := e.etcd.Put(ctx, key, string(b)); err != nil {
		return err
	}
	// The watch cache is fed by etcd's watch; wait until the API serves
	// the tampered object, so the deletion acts on it.
	return waitFor(30*time.Second, func() error {
		code, body := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/"+name, "", vars)
		if code != http.StatusOK || !strings.Contains(body, expand(`"cluster":"`+cluster+`"`, vars)) {
			return fmt.Errorf("tampered status not served yet: %d %s", code, body)
		}
		return nil
	})
}

// bobChild creates bob's child name with a ConfigMap in it.
func bobChild(e *attackEnv, name string, vars map[string]string) error {
	if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}"+wsAPI, wsJSON(name, "", ""), vars); err != nil {
		return err
	}
	// The creator's binding reaches the authorizer through a watch.
	return waitFor(30*time.Second, func() error {
		code, body := e.as("bob", http.MethodPost, "/clusters/{bobHome}:"+name+"/api/v1/namespaces/default/configmaps",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"inside"}}`, vars)
		if code != http.StatusCreated && code != http.StatusConflict {
			return fmt.Errorf("creating a ConfigMap in %s: %d %s", name, code, body)
		}
		return nil
	})
}

// ageAllocation backdates the index record of bob's child name, as if it
// had been created long ago.
func ageAllocation(e *attackEnv, name string, vars map[string]string) error {
	code, body := e.as("bob", http.MethodGet, "/clusters/{bobHome}"+wsAPI+"/"+name, "", vars)
	var ws struct {
		Status struct{ Cluster, Path string }
	}
	if err := json.Unmarshal([]byte(body), &ws); code != http.StatusOK || err != nil || ws.Status.Cluster == "" {
		return fmt.Errorf("reading workspace %s: %d %v %s", name, code, err, body)
	}
	rec, err := json.Marshal(map[string]string{"path": ws.Status.Path, "allocated": "2020-01-01T00:00:00Z"})
	if err != nil {
		return err
	}
	_, err = e.etcd.Put(context.Background(), "/registry/wharf.dev/logicalclusters/"+ws.Status.Cluster, string(rec))
	return err
}
