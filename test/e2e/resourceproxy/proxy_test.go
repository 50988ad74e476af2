package resourceproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
)

func db(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Database",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": size},
	}}
}

func names(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, i := range l.Items {
		out = append(out, i.GetName())
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code int32) {
	t.Helper()
	var se *apierrors.StatusError
	if err == nil || !asStatus(err, &se) || se.ErrStatus.Code != code {
		t.Fatalf("%s: err %v, want HTTP %d", what, err, code)
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	if ok {
		*se = s
	}
	return ok
}

// TestExternalTarget runs the spec's behaviours through the proxy against
// a real two-replica kube-apiserver.
func TestExternalTarget(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	admin := e.kube.Clientset(t)
	adminDyn, err := dynamic.NewForConfig(e.kube.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []client{teamA, teamB, teamC, teamD, teamAll} {
		e.ns.add(cl, "apps")
	}
	a, b := e.dyn(teamA).Namespace("apps"), e.dyn(teamB).Namespace("apps")

	t.Run("crud, namespace created on the target", func(t *testing.T) {
		if _, err := admin.CoreV1().Namespaces().Get(ctx, "apps", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace apps exists on the target before the test: %v", err)
		}
		created, err := a.Create(ctx, db("a1", 1), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if !strings.Contains(created.GetLabels()[rp.OwnerClusterLabel], teamA.id) || created.GetLabels()[rp.OwnerWorkspaceLabel] != "team-a" {
			t.Fatalf("owner labels %v", created.GetLabels())
		}
		if _, err := admin.CoreV1().Namespaces().Get(ctx, "apps", metav1.GetOptions{}); err != nil {
			t.Fatalf("namespace not created on the target: %v", err)
		}
		got, err := a.Get(ctx, "a1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		unstructured.SetNestedField(got.Object, int64(2), "spec", "size")
		// An update that drops the labels keeps the object owned.
		got.SetLabels(map[string]string{"app": "db"})
		upd, err := a.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if upd.GetLabels()[rp.OwnerClusterLabel] != teamA.id || upd.GetLabels()["app"] != "db" {
			t.Fatalf("labels after update %v", upd.GetLabels())
		}
		if _, err := a.Patch(ctx, "a1", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("merge patch: %v", err)
		}
		if _, err := a.Patch(ctx, "a1", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/size","value":4}]`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("json patch: %v", err)
		}
		applied, err := a.Apply(ctx, "a2", db("a2", 7), metav1.ApplyOptions{FieldManager: "team-a-ci"})
		if err != nil {
			t.Fatalf("server-side apply: %v", err)
		}
		if applied.GetLabels()[rp.OwnerClusterLabel] != teamA.id {
			t.Fatalf("apply labels %v", applied.GetLabels())
		}
		l, err := a.List(ctx, metav1.ListOptions{})
		if err != nil || strings.Join(names(l), ",") != "a1,a2" {
			t.Fatalf("list %v %v", names(l), err)
		}
		w, err := a.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		eventually(t, "watch gauge", func() error {
			if got := e.metric("wharf_resource_proxy_active_watches", map[string]string{"target": targetName}); got != 1 {
				return fmt.Errorf("active_watches = %v, want 1", got)
			}
			return nil
		})
		if err := a.Delete(ctx, "a2", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Deleted || ev.Object.(*unstructured.Unstructured).GetName() != "a2" {
				t.Fatalf("watch event %s %v", ev.Type, ev.Object)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no watch event")
		}
	})

	t.Run("multi-client isolation", func(t *testing.T) {
		if _, err := b.Create(ctx, db("b1", 1), metav1.CreateOptions{}); err != nil {
			t.Fatalf("team-b create: %v", err)
		}
		la, _ := a.List(ctx, metav1.ListOptions{})
		lb, _ := b.List(ctx, metav1.ListOptions{})
		if strings.Join(names(la), ",") != "a1" || strings.Join(names(lb), ",") != "b1" {
			t.Fatalf("team-a sees %v, team-b sees %v", names(la), names(lb))
		}
		// The caller's own selector cannot widen the view.
		lsel, _ := a.List(ctx, metav1.ListOptions{LabelSelector: rp.OwnerClusterLabel + "=" + teamB.id})
		if len(lsel.Items) != 0 {
			t.Fatalf("team-a with team-b's selector sees %v", names(lsel))
		}
		_, err := a.Get(ctx, "b1", metav1.GetOptions{})
		wantCode(t, "team-a get b1", err, 404)
		all, err := adminDyn.Resource(dbGVR).Namespace("apps").List(ctx, metav1.ListOptions{})
		if err != nil || strings.Join(names(all), ",") != "a1,b1" {
			t.Fatalf("target sees %v %v", names(all), err)
		}
	})

	t.Run("named mutations of another client's object are 404", func(t *testing.T) {
		_, err := b.Patch(ctx, "a1", types.MergePatchType, []byte(`{"spec":{"size":9}}`), metav1.PatchOptions{})
		wantCode(t, "team-b patch a1", err, 404)
		wantCode(t, "team-b delete a1", b.Delete(ctx, "a1", metav1.DeleteOptions{}), 404)
		// The table form (kubectl get) is masked too.
		req, _ := http.NewRequest(http.MethodGet, e.front.URL+"/apis/"+group+"/v1/namespaces/apps/databases/a1", nil)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := (&http.Client{Transport: asHub{rt: http.DefaultTransport, cl: teamB}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("table get of a1 as team-b: %d", resp.StatusCode)
		}
	})

	t.Run("409 on a name another client uses", func(t *testing.T) {
		_, err := b.Create(ctx, db("a1", 1), metav1.CreateOptions{})
		wantCode(t, "team-b create a1", err, 409)
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("want AlreadyExists from the target, got %v", err)
		}
	})

	t.Run("mutation without get is 404", func(t *testing.T) {
		c := e.dyn(teamC).Namespace("apps")
		if _, err := c.Create(ctx, db("c1", 1), metav1.CreateOptions{}); err != nil {
			t.Fatalf("team-c create: %v", err)
		}
		_, err := c.Patch(ctx, "c1", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
		wantCode(t, "team-c patch without get", err, 404)
	})

	t.Run("namespace_missing", func(t *testing.T) {
		_, err := e.dyn(teamA).Namespace("nowhere").Create(ctx, db("x", 1), metav1.CreateOptions{})
		wantCode(t, "create in a namespace the client lacks", err, 404)
		if !strings.Contains(err.Error(), `namespaces "nowhere" not found`) {
			t.Fatalf("message %v", err)
		}
		if _, err := admin.CoreV1().Namespaces().Get(ctx, "nowhere", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace created on the target anyway: %v", err)
		}
	})

	t.Run("mode all", func(t *testing.T) {
		ops := e.dyn(teamAll).Namespace("apps")
		l, err := ops.List(ctx, metav1.ListOptions{})
		if err != nil || strings.Join(names(l), ",") != "a1,b1,c1" {
			t.Fatalf("mode all sees %v %v", names(l), err)
		}
		if _, err := ops.Get(ctx, "b1", metav1.GetOptions{}); err != nil {
			t.Fatalf("mode all get b1: %v", err)
		}
		// A write in mode all does not take another client's object over.
		p, err := ops.Patch(ctx, "b1", types.MergePatchType, []byte(`{"spec":{"size":5}}`), metav1.PatchOptions{})
		if err != nil || p.GetLabels()[rp.OwnerClusterLabel] != teamB.id {
			t.Fatalf("mode all patch: %v labels %v", err, p)
		}
	})

	t.Run("the target's RBAC decides", func(t *testing.T) {
		_, err := e.dyn(teamD).Namespace("apps").List(ctx, metav1.ListOptions{})
		wantCode(t, "team-d list", err, 403)
		if !strings.Contains(err.Error(), "wharf:workspace:root:acme:team-d") {
			t.Fatalf("403 does not name the client identity: %v", err)
		}
		// A caller cannot pick another identity: its Impersonate-* and
		// Authorization headers never reach the target.
		req, _ := http.NewRequest(http.MethodGet, e.front.URL+"/apis/"+group+"/v1/namespaces/apps/databases", nil)
		req.Header.Set("Impersonate-User", "wharf:workspace:root:acme:team-a")
		req.Header.Set("Impersonate-Group", "system:masters")
		req.Header.Set("Authorization", "Bearer "+e.kube.Token(t, "wharf-test-admin"))
		resp, err := (&http.Client{Transport: asHub{rt: http.DefaultTransport, cl: teamD}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("team-d with forged headers: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("the provider's credential impersonates only wharf:workspace users", func(t *testing.T) {
		for _, who := range []struct {
			user   string
			groups []string
			ok     bool
		}{
			{"wharf:workspace:root:acme:team-a", nil, true},
			{"wharf-test-admin", nil, false},
			{"system:admin", nil, false},
			{"wharf:workspace:root:acme:team-a", []string{"system:masters"}, false},
			{"wharf:workspace:root:evil", nil, false},
		} {
			cfg := e.kube.UserConfig(t, providerUser)
			cfg.Impersonate.UserName, cfg.Impersonate.Groups = who.user, who.groups
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.Discovery().ServerVersion()
			if who.ok != (err == nil) {
				t.Errorf("impersonating %s %v: err %v, want ok=%v", who.user, who.groups, err, who.ok)
			}
		}
	})

	t.Run("direct calls, upgrades, discovery", func(t *testing.T) {
		// Without X-Kedge-Original-Path (a /services/providers/... call).
		resp, err := http.Get(e.front.URL + "/apis/" + group + "/v1/namespaces/apps/databases")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("direct call: %d, want 404", resp.StatusCode)
		}
		hc := &http.Client{Transport: asHub{rt: http.DefaultTransport, cl: teamA}}
		req, _ := http.NewRequest(http.MethodPost, e.front.URL+"/apis/"+group+"/v1/namespaces/apps/databases/a1/exec", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		resp, err = hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 501 || !strings.Contains(string(body), "resource proxy does not support connection upgrades") {
			t.Fatalf("upgrade: %d %s", resp.StatusCode, body)
		}
		resp, err = hc.Get(e.front.URL + "/apis/" + group + "/v1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		// The target's own document: all verbs, not the get-only fallback.
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"deletecollection"`) {
			t.Fatalf("discovery: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("discovery fallback on 401 and 404", func(t *testing.T) {
		// A kubeconfig whose token the target rejects (401), and a version
		// the target does not serve (404): discovery is served locally.
		bad := e.kube.Config()
		bad.BearerToken = "wrong-token"
		kc, err := os.ReadFile(e.kube.WriteKubeconfig(t, "bad", bad))
		if err != nil {
			t.Fatal(err)
		}
		e.secrets.put("ops", "bad", kc)
		teamF := client{"ffffffffffffffff", "root:acme:team-f"}
		ext := func(secret string) rp.Target {
			return rp.Target{External: &rp.External{Name: targetName, SecretRef: rp.SecretRef{Namespace: "ops", Name: secret}}}
		}
		e.routes.Set(teamF.id, map[string]*rp.Route{
			group + "/v1": {Cluster: teamF.id, Group: group, Version: "v1", Mode: rp.AccessOwned, Resources: []string{"databases", "policies"}, Target: ext("bad")},
			group + "/v2": {Cluster: teamF.id, Group: group, Version: "v2", Mode: rp.AccessOwned, Wildcard: true, Target: ext("prod")},
		})
		hc := &http.Client{Transport: asHub{rt: http.DefaultTransport, cl: teamF}}
		for _, c := range []struct{ path, want string }{
			{"/apis/" + group + "/v1", `"resources":[{"name":"databases","singularName":"database","namespaced":true,"kind":"Database","verbs":["get"]},{"name":"policies","singularName":"policy","namespaced":true,"kind":"Policy","verbs":["get"]}]`},
			{"/apis/" + group + "/v2", `"resources":[]`},
			{"/apis/" + group, `"versions":[{"groupVersion":"databases.example.com/v1","version":"v1"},{"groupVersion":"databases.example.com/v2","version":"v2"}]`},
		} {
			resp, err := hc.Get(e.front.URL + c.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), c.want) {
				t.Errorf("%s: %d %s, want %s", c.path, resp.StatusCode, body, c.want)
			}
		}
		for _, gv := range []string{group + "/v1", group + "/v2"} {
			if got := e.metric("wharf_resource_proxy_discovery_fallbacks_total", map[string]string{"target": targetName, "group_version": gv, "reason": "upstream"}); got != 1 {
				t.Errorf("fallbacks for %s = %v, want 1", gv, got)
			}
		}
		// Non-discovery requests with the rejected credential pass the
		// target's 401 on.
		_, err = e.dyn(teamF).Namespace("apps").List(ctx, metav1.ListOptions{})
		wantCode(t, "list with a rejected credential", err, 401)
	})

	t.Run("ResourceProxy CRD validation", func(t *testing.T) { checkCRD(t, e) })

	t.Run("metrics", func(t *testing.T) {
		for _, m := range []struct {
			labels map[string]string
			min    float64
		}{
			{map[string]string{"target": targetName, "group_version": group + "/v1", "verb": "create", "code": "201", "reason": "upstream"}, 3},
			{map[string]string{"target": targetName, "verb": "create", "code": "409", "reason": "upstream"}, 1},
			{map[string]string{"target": targetName, "verb": "get", "code": "404", "reason": "ownership_masked"}, 2},
			{map[string]string{"target": targetName, "verb": "patch", "code": "404", "reason": "ownership_masked"}, 1},
			{map[string]string{"target": targetName, "verb": "delete", "code": "404", "reason": "ownership_masked"}, 1},
			{map[string]string{"target": targetName, "verb": "patch", "code": "404", "reason": "ownership_check_failed"}, 1},
			{map[string]string{"target": targetName, "verb": "create", "code": "404", "reason": "namespace_missing"}, 1},
			{map[string]string{"target": targetName, "verb": "list", "code": "403", "reason": "upstream"}, 2},
			{map[string]string{"target": targetName, "code": "501", "reason": "upgrade_rejected"}, 1},
		} {
			if got := e.metric("wharf_resource_proxy_requests_total", m.labels); got < m.min {
				t.Errorf("requests_total%v = %v, want ≥ %v", m.labels, got, m.min)
			}
		}
		eventually(t, "watch gauge back to 0", func() error {
			if got := e.metric("wharf_resource_proxy_active_watches", map[string]string{"target": targetName}); got != 0 {
				return fmt.Errorf("active_watches = %v", got)
			}
			return nil
		})
		if got := e.metric("wharf_resource_proxy_inflight_requests", map[string]string{"target": targetName}); got != 0 {
			t.Errorf("inflight = %v, want 0", got)
		}
		if got := e.metric("wharf_resource_proxy_request_duration_seconds", map[string]string{"target": targetName, "verb": "create"}); got < 5 {
			t.Errorf("create durations observed = %v, want ≥ 5", got)
		}
		if got := e.metric("wharf_resource_proxy_peers", map[string]string{"target": targetName, "group_version": group + "/v1", "state": "healthy"}); got < 2 {
			t.Errorf("healthy peers = %v, want 2 per routed client", got)
		}
		if got := e.metric("wharf_resource_proxy_peer_dial_duration_seconds", map[string]string{"target": targetName}); got < 1 {
			t.Errorf("dial durations = %v", got)
		}
		fmt.Println("metrics asserted")
	})
}
