package core_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

var tableAccept = http.Header{"Accept": []string{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}}

func nsNames(t *testing.T, cs kubernetes.Interface, opts metav1.ListOptions) ([]string, error) {
	t.Helper()
	list, err := cs.CoreV1().Namespaces().List(testCtx(t), opts)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out, nil
}

// TestNamespaceCore covers namespace list (selector injection, Table
// output), watch, named GET, create, mutation, the create-if-missing rule,
// Tenant objects, stripping of client impersonation, group filtering and
// ignored callers, against the real kube-apiserver.
func TestNamespaceCore(t *testing.T) {
	e := startEnv(t)
	wind := e.tenant(t, "wind", "alice")
	solar := e.tenant(t, "solar", "bob")
	e.namespace(t, "wind-a", wind, false, "alice")
	e.namespace(t, "wind-b", wind, true, "alice")
	e.namespace(t, "solar-a", solar, false, "bob")
	e.namespace(t, "shared", nil, false)

	f := e.startFilter(t, core.Options{
		RequireCapsuleUser:         true,
		IgnoredUserGroups:          []string{"keep-ops"},
		ImpersonationGroupRegexp:   `^(projectcapsule\.dev|keep-.*|dropped-group)$`,
		IgnoredImpersonationGroups: []string{"dropped-group"},
	})
	alice := f.clientset(t, "alice", capsuleGroup)
	bob := f.clientset(t, "bob", capsuleGroup)

	t.Run("list is exactly the owned tenants' namespaces", func(t *testing.T) {
		for _, c := range []struct {
			name string
			cs   kubernetes.Interface
			want []string
		}{{"alice", alice, []string{"wind-a", "wind-b"}}, {"bob", bob, []string{"solar-a"}}} {
			eventually(t, time.Minute, func() error {
				got, err := nsNames(t, c.cs, metav1.ListOptions{})
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(got, c.want) {
					return fmt.Errorf("%s sees %v, want %v", c.name, got, c.want)
				}
				return nil
			})
		}
	})

	t.Run("client selector is ANDed, bad selector is 400, nothing to see is an empty list", func(t *testing.T) {
		got, err := nsNames(t, alice, metav1.ListOptions{LabelSelector: capsulev1beta2.TenantLabel + "=wind"})
		if err != nil || !reflect.DeepEqual(got, []string{"wind-a"}) {
			t.Fatalf("alice with tenant label selector: %v %v", got, err)
		}
		got, err = nsNames(t, alice, metav1.ListOptions{LabelSelector: "kubernetes.io/metadata.name=solar-a"})
		if err != nil || len(got) != 0 {
			t.Fatalf("alice selecting bob's namespace: %v %v", got, err)
		}
		code, body := f.do(t, "alice", "GET", "/api/v1/namespaces?labelSelector=a+in+(b", "", nil)
		if code != http.StatusBadRequest || !strings.Contains(body, `"kind":"Status"`) {
			t.Fatalf("bad selector: %d %s", code, body)
		}
		code, body = f.do(t, "carol", "GET", "/api/v1/namespaces", "", nil)
		var list corev1.NamespaceList
		if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || list.Kind != "NamespaceList" ||
			list.APIVersion != "v1" || list.ResourceVersion == "" || len(list.Items) != 0 {
			t.Fatalf("carol (owns nothing): %d %s", code, body)
		}
	})

	t.Run("Table output equals the kube-apiserver's", func(t *testing.T) {
		code, body := f.do(t, "alice", "GET", "/api/v1/namespaces", "", tableAccept)
		if code != http.StatusOK {
			t.Fatalf("table list: %d %s", code, body)
		}
		direct, err := e.admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces").
			Param("labelSelector", "kubernetes.io/metadata.name in (wind-a,wind-b)").
			SetHeader("Accept", tableAccept.Get("Accept")).DoRaw(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		var viaFilter, viaKube metav1.Table
		if json.Unmarshal([]byte(body), &viaFilter) != nil || json.Unmarshal(direct, &viaKube) != nil {
			t.Fatalf("undecodable tables:\n%s\n%s", body, direct)
		}
		if !reflect.DeepEqual(viaFilter.ColumnDefinitions, viaKube.ColumnDefinitions) || len(viaFilter.Rows) != 2 {
			t.Fatalf("columns differ or wrong rows:\nfilter %+v (%d rows)\nkube   %+v", viaFilter.ColumnDefinitions, len(viaFilter.Rows), viaKube.ColumnDefinitions)
		}
		for i := range viaFilter.Rows {
			if !reflect.DeepEqual(viaFilter.Rows[i].Cells[:2], viaKube.Rows[i].Cells[:2]) {
				t.Fatalf("row %d: %v vs %v", i, viaFilter.Rows[i].Cells, viaKube.Rows[i].Cells)
			}
		}
	})

	t.Run("a warm list costs no downstream call; a Table list exactly one", func(t *testing.T) {
		counter := &callCounter{path: "/api/v1/namespaces"}
		cfg := e.fx.Config()
		cfg.WrapTransport = counter.wrap
		g := e.startFilterWith(t, cfg, core.Options{RequireCapsuleUser: true})
		cs := g.clientset(t, "alice", capsuleGroup)
		counter.reset()
		for range 5 {
			got, err := nsNames(t, cs, metav1.ListOptions{})
			if err != nil || !reflect.DeepEqual(got, []string{"wind-a", "wind-b"}) {
				t.Fatalf("cached list: %v %v", got, err)
			}
		}
		if n := counter.reset(); n != 0 {
			t.Fatalf("5 cached lists made %d downstream list calls", n)
		}
		for range 3 {
			if code, body := g.do(t, "alice", "GET", "/api/v1/namespaces", "", tableAccept); code != http.StatusOK {
				t.Fatalf("table: %d %s", code, body)
			}
		}
		if n := counter.reset(); n != 3 {
			t.Fatalf("3 Table lists made %d downstream list calls, want 3", n)
		}
	})

	t.Run("named GET of an invisible namespace is 404", func(t *testing.T) {
		if _, err := alice.CoreV1().Namespaces().Get(testCtx(t), "wind-b", metav1.GetOptions{}); err != nil {
			t.Fatalf("alice get own namespace: %v", err)
		}
		for _, name := range []string{"solar-a", "shared", "no-such-ns"} {
			code, body := f.do(t, "alice", "GET", "/api/v1/namespaces/"+name, "", nil)
			want := `namespaces \"` + name + `\" not found`
			if code != http.StatusNotFound || !strings.Contains(body, want) || !strings.Contains(body, `"reason":"NotFound"`) {
				t.Fatalf("alice get %s: %d %s", name, code, body)
			}
		}
		code, body := f.do(t, "alice", "GET", "/api/v1/namespaces/solar-a", "", tableAccept)
		if code != http.StatusNotFound {
			t.Fatalf("alice get solar-a as Table: %d %s", code, body)
		}
	})

	t.Run("watch sees namespaces added later and visibility changes", func(t *testing.T) {
		list, err := alice.CoreV1().Namespaces().List(testCtx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := alice.CoreV1().Namespaces().Watch(testCtx(t), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		e.namespace(t, "solar-b", solar, false)
		e.namespace(t, "wind-c", wind, false)
		expectEvents(t, w, watch.Added, "solar-b", "wind-c")
		// alice becomes an owner of solar: its namespaces appear in the
		// running watch without a new request.
		addOwner(t, e, "solar", "alice")
		defer removeOwner(t, e, "solar", "alice") // idempotent; keeps later subtests meaningful on failure
		expectEvents(t, w, watch.Added, "", "solar-a", "solar-b")
		removeOwner(t, e, "solar", "alice")
		// Later subtests need alice to own wind alone again.
		eventually(t, time.Minute, func() error {
			if code, _ := f.do(t, "alice", "GET", "/api/v1/namespaces/solar-a", "", nil); code != http.StatusNotFound {
				return fmt.Errorf("alice still sees solar-a: %d", code)
			}
			return nil
		})
		expectEvents(t, w, watch.Deleted, "", "solar-a", "solar-b")
	})

	t.Run("a Table watch (kubectl get ns -w) is filtered too", func(t *testing.T) {
		go func() {
			time.Sleep(time.Second)
			e.namespace(t, "wind-table", wind, false)
			e.namespace(t, "solar-table", solar, false)
		}()
		// timeoutSeconds makes the downstream end the watch, so the body
		// can be read whole.
		code, body := f.do(t, "alice", "GET", "/api/v1/namespaces?watch=1&timeoutSeconds=6", "", tableAccept)
		if code != http.StatusOK || !strings.Contains(body, `"wind-table"`) || strings.Contains(body, "solar-") || !strings.Contains(body, `"kind":"Table"`) {
			t.Fatalf("table watch: %d %s", code, body)
		}
	})

	t.Run("create in an owned tenant is labelled; elsewhere 403 and not persisted", func(t *testing.T) {
		created, err := alice.CoreV1().Namespaces().Create(testCtx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wind-new"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("alice create: %v", err)
		}
		stored, err := e.admin.CoreV1().Namespaces().Get(testCtx(t), "wind-new", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stored.Labels[capsulev1beta2.TenantLabel] != "wind" || stored.Labels[capsulev1beta2.ProjectTenantLabel] != "wind" ||
			len(stored.OwnerReferences) != 1 || stored.OwnerReferences[0].UID != wind.GetUID() || created.Name != "wind-new" {
			t.Fatalf("stored namespace: labels %v refs %v", stored.Labels, stored.OwnerReferences)
		}
		got, err := nsNames(t, alice, metav1.ListOptions{})
		if err != nil || !contains(got, "wind-new") {
			t.Fatalf("list right after create: %v %v", got, err)
		}
		for _, c := range []struct{ user, body string }{
			{"bob", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bob-in-wind","labels":{"capsule.clastix.io/tenant":"wind"}}}`},
			{"carol", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"carol-ns"}}`},
			// An ownerReference to someone else's Tenant must not sneak in.
			{"bob", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bob-ref","labels":{"projectcapsule.dev/tenant":"wind"}}}`},
		} {
			code, body := f.do(t, c.user, "POST", "/api/v1/namespaces", c.body, nil)
			if code != http.StatusForbidden || !strings.Contains(body, `"reason":"Forbidden"`) {
				t.Fatalf("%s create elsewhere: %d %s", c.user, code, body)
			}
		}
		for _, n := range []string{"bob-in-wind", "carol-ns", "bob-ref"} {
			if _, err := e.admin.CoreV1().Namespaces().Get(testCtx(t), n, metav1.GetOptions{}); !isNotFound(err) {
				t.Fatalf("namespace %s persisted: %v", n, err)
			}
		}
		// An owner of several tenants must say which.
		addOwner(t, e, "solar", "alice")
		defer removeOwner(t, e, "solar", "alice")
		// The filter learns the new owner through its Tenant informer:
		// wait until alice sees solar's namespace before asking.
		eventually(t, time.Minute, func() error {
			if code, body := f.do(t, "alice", "GET", "/api/v1/namespaces/solar-a", "", nil); code != http.StatusOK {
				return fmt.Errorf("alice get solar-a: %d %s", code, body)
			}
			return nil
		})
		code, body := f.do(t, "alice", "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"which-one"}}`, nil)
		if code != http.StatusBadRequest {
			t.Fatalf("alice with two tenants, no label: %d %s", code, body)
		}
		code, body = f.do(t, "alice", "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"solar-by-alice","labels":{"capsule.clastix.io/tenant":"solar"}}}`, nil)
		if code != http.StatusCreated {
			t.Fatalf("alice create in solar by label: %d %s", code, body)
		}
	})

	t.Run("a namespace cannot be moved to another tenant", func(t *testing.T) {
		patch := []byte(`{"metadata":{"labels":{"capsule.clastix.io/tenant":"solar"}}}`)
		_, err := alice.CoreV1().Namespaces().Patch(testCtx(t), "wind-a", types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Fatalf("alice moves wind-a to solar: %v", err)
		}
		stored, _ := e.admin.CoreV1().Namespaces().Get(testCtx(t), "wind-a", metav1.GetOptions{})
		if stored.Labels[capsulev1beta2.TenantLabel] != "wind" {
			t.Fatalf("wind-a moved: %v", stored.Labels)
		}
		ok := []byte(`{"metadata":{"labels":{"team":"blue"}}}`)
		if _, err := alice.CoreV1().Namespaces().Patch(testCtx(t), "wind-a", types.MergePatchType, ok, metav1.PatchOptions{}); err != nil {
			t.Fatalf("alice labels her namespace: %v", err)
		}
		if _, err := alice.CoreV1().Namespaces().Patch(testCtx(t), "solar-a", types.MergePatchType, ok, metav1.PatchOptions{}); err == nil {
			t.Fatal("alice patched bob's namespace")
		}
	})

	t.Run("Tenant objects only for their owners", func(t *testing.T) {
		d := f.dynamic(t, "alice", capsuleGroup)
		list, err := d.Resource(capsulev1beta2.TenantsGVR).List(testCtx(t), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "wind" {
			t.Fatalf("alice lists tenants: %v %v", names(list), err)
		}
		code, body := f.do(t, "alice", "GET", "/apis/capsule.clastix.io/v1beta2/tenants/solar", "", nil)
		if code != http.StatusNotFound || !strings.Contains(body, `tenants.capsule.clastix.io \"solar\" not found`) {
			t.Fatalf("alice get solar: %d %s", code, body)
		}
		code, body = f.do(t, "alice", "GET", "/apis/capsule.clastix.io/v1beta2/tenants", "", tableAccept)
		if code != http.StatusOK || !strings.Contains(body, `"wind"`) || strings.Contains(body, `"solar"`) {
			t.Fatalf("alice tenants table: %d %s", code, body)
		}
	})

	t.Run("client impersonation is stripped; groups are filtered", func(t *testing.T) {
		hdr := http.Header{"Impersonate-User": {"system:admin"}, "Impersonate-Group": {"system:masters"}, "Impersonate-Extra-Scopes": {"x"}}
		req := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
		r, err := http.NewRequest("POST", f.srv.URL+"/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			r.Header[k] = v
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Test-User", "alice")
		for _, g := range []string{capsuleGroup, "keep-1", "other", "dropped-group"} {
			r.Header.Add("X-Test-Group", g)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ssr struct {
			Status struct {
				UserInfo struct {
					Username string              `json:"username"`
					Groups   []string            `json:"groups"`
					Extra    map[string][]string `json:"extra"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&ssr); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("selfsubjectreview: %d %v", resp.StatusCode, err)
		}
		ui := ssr.Status.UserInfo
		sort.Strings(ui.Groups)
		if ui.Username != "alice" || !reflect.DeepEqual(ui.Groups, []string{"keep-1", capsuleGroup, "system:authenticated"}) || len(ui.Extra) != 0 {
			t.Fatalf("downstream saw %+v", ui)
		}
	})

	t.Run("ignored callers are unfiltered; no caller is 401; non-tenant users keep their RBAC", func(t *testing.T) {
		ops := f.clientset(t, "ops", capsuleGroup, "keep-ops")
		got, err := nsNames(t, ops, metav1.ListOptions{})
		if err != nil || !contains(got, "solar-a") || !contains(got, "shared") || !contains(got, "kube-system") {
			t.Fatalf("ignored caller: %v %v", got, err)
		}
		code, body := f.do(t, "", "GET", "/api/v1/namespaces", "", nil)
		if code != http.StatusUnauthorized || !strings.Contains(body, `"kind":"Status"`) {
			t.Fatalf("no caller: %d %s", code, body)
		}
		mallory := f.clientset(t, "mallory")
		if _, err := nsNames(t, mallory, metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Fatalf("mallory (not a tenant user) should get the downstream's 403: %v", err)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func names(list *unstructured.UnstructuredList) []string {
	if list == nil {
		return nil
	}
	var out []string
	for _, i := range list.Items {
		out = append(out, i.GetName())
	}
	return out
}

// expectEvents waits for events of type typ for every name in want,
// failing on any event for forbidden.
func expectEvents(t *testing.T, w watch.Interface, typ watch.EventType, forbidden string, want ...string) {
	t.Helper()
	missing := map[string]bool{}
	for _, n := range want {
		missing[n] = true
	}
	timeout := time.After(time.Minute)
	for len(missing) > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed waiting for %s %v", typ, missing)
			}
			ns, isNS := ev.Object.(*corev1.Namespace)
			if !isNS {
				continue
			}
			if forbidden != "" && ns.Name == forbidden {
				t.Fatalf("watch leaked %s %s", ev.Type, ns.Name)
			}
			if ev.Type == typ {
				delete(missing, ns.Name)
			}
		case <-timeout:
			t.Fatalf("no %s event for %v", typ, missing)
		}
	}
}

func setOwners(t *testing.T, e *env, tenant string, edit func([]any) []any) {
	t.Helper()
	res := e.dyn.Resource(capsulev1beta2.TenantsGVR)
	eventually(t, time.Minute, func() error {
		tn, err := res.Get(testCtx(t), tenant, metav1.GetOptions{})
		if err != nil {
			return err
		}
		owners, _, _ := unstructured.NestedSlice(tn.Object, "spec", "owners")
		if err := unstructured.SetNestedSlice(tn.Object, edit(owners), "spec", "owners"); err != nil {
			return err
		}
		_, err = res.Update(testCtx(t), tn, metav1.UpdateOptions{})
		return err
	})
}

func addOwner(t *testing.T, e *env, tenant, user string) {
	setOwners(t, e, tenant, func(o []any) []any { return append(o, map[string]any{"kind": "User", "name": user}) })
}

func removeOwner(t *testing.T, e *env, tenant, user string) {
	setOwners(t, e, tenant, func(o []any) []any {
		var out []any
		for _, x := range o {
			if m, ok := x.(map[string]any); ok && m["name"] == user {
				continue
			}
			out = append(out, x)
		}
		return out
	})
}
