package tenantfilter

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
	"github.com/wharfhub/wharf/test/kube"
)

// nsTarget is what the namespace scenarios talk to: the real standalone
// binary once cmd/wharf-provider-tenant-filter exists, else the core in
// process behind a front end mapping the fixture's static tokens to users.
type nsTarget interface {
	Config(t testing.TB, user string) *rest.Config
	Do(t testing.TB, user, method, path string, body string, header http.Header) (int, string)
	Kubectl(t testing.TB, user string, args ...string) (string, error)
}

type nsOptions struct {
	Reflector     bool // --enable-reflector
	AllNamespaced bool // --feature-gates=ProxyAllNamespaced=true
}

func startNSTarget(t *testing.T, o nsOptions) nsTarget {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", proxyBinaryName, "main.go")); err == nil {
		var args []string
		if o.Reflector {
			args = append(args, "--enable-reflector")
		}
		if o.AllNamespaced {
			args = append(args, "--feature-gates="+core.GateProxyAllNamespaced+"=true")
		}
		return startProxy(t, proxyOptions{TLS: true, Args: args})
	}
	return startNSInProcess(t, core.Options{RequireCapsuleUser: true, EnableReflector: o.Reflector,
		FeatureGates: map[string]bool{core.GateProxyAllNamespaced: o.AllNamespaced}})
}

type nsInProcess struct{ srv *httptest.Server }

func startNSInProcess(t *testing.T, opts core.Options) *nsInProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := core.New(ctx, fx.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
	defer wcancel()
	if !c.WaitForSync(wctx) {
		t.Fatal("core caches did not sync")
	}
	users := map[string]core.Caller{}
	for _, u := range testUsers {
		users[fx.Token(t, u.Name)] = core.Caller{User: u.Name, Groups: append(append([]string{}, u.Groups...), "system:authenticated")}
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, ok := users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		c.ServeHTTP(w, r.WithContext(core.WithCaller(r.Context(), caller)))
	}))
	t.Cleanup(srv.Close)
	return &nsInProcess{srv: srv}
}

func (p *nsInProcess) Config(t testing.TB, user string) *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	return &rest.Config{Host: p.srv.URL, BearerToken: fx.Token(t, user), QPS: -1,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func (p *nsInProcess) Do(t testing.TB, user, method, path string, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+fx.Token(t, user))
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

func (p *nsInProcess) Kubectl(t testing.TB, user string, args ...string) (string, error) {
	t.Helper()
	return runKubectl(t, fx.WriteKubeconfig(t, uniq("nsinproc-"+user), p.Config(t, user)), args...)
}

func targetClientset(t testing.TB, tg nsTarget, user string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(tg.Config(t, user))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ownedNamespaces is, from the admin's view, every namespace of every
// tenant user (or one of groups) owns: what a filtered list must equal.
// Other tests share the fixture and may make the same users own tenants.
func ownedNamespaces(t testing.TB, user string, groups []string) []string {
	t.Helper()
	tl, err := adminDynamic().Resource(capsulev1beta2.TenantsGVR).List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{}
	for _, u := range tl.Items {
		var tn capsulev1beta2.Tenant
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tn); err != nil {
			t.Fatal(err)
		}
		for _, o := range tn.Spec.Owners {
			if (o.Kind != capsulev1beta2.GroupOwner && o.Name == user) || (o.Kind == capsulev1beta2.GroupOwner && containsStr(groups, o.Name)) {
				owned[tn.Name] = true
			}
		}
	}
	nl, err := adminClientset().CoreV1().Namespaces().List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ns := range nl.Items {
		tenant := ""
		for _, r := range ns.OwnerReferences {
			if r.Kind == "Tenant" && strings.HasPrefix(r.APIVersion, capsulev1beta2.GroupName+"/") {
				tenant = r.Name
			}
		}
		if tenant == "" {
			tenant = ns.Labels[capsulev1beta2.TenantLabel]
		}
		if tenant == "" {
			tenant = ns.Labels[capsulev1beta2.ProjectTenantLabel]
		}
		if owned[tenant] {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func groupsOf(user string) []string {
	for _, u := range testUsers {
		if u.Name == user {
			return u.Groups
		}
	}
	return nil
}

func listNamespaceNames(t testing.TB, cs kubernetes.Interface) ([]string, error) {
	t.Helper()
	l, err := cs.CoreV1().Namespaces().List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out, nil
}

// TestNamespaces is capsule-proxy's namespace scenarios: alice and bob list
// exactly their tenants' namespaces, a watch sees one added later (and
// never another tenant's), creating in an owned tenant labels the
// namespace while creating elsewhere is 403 and persists nothing, a named
// GET of an invisible namespace is 404, and kubectl's columns are the
// kube-apiserver's.
func TestNamespaces(t *testing.T) {
	wind := createTenant(t, newTenant(uniq("wind"), userOwner("alice")))
	solar := createTenant(t, newTenant(uniq("solar"), userOwner("bob")))
	windA := createTenantNamespace(t, wind, uniq("wind-a"), linkCapsule).Name
	windB := createTenantNamespace(t, wind, uniq("wind-b"), linkOwnerRef).Name
	solarA := createTenantNamespace(t, solar, uniq("solar-a"), linkProject).Name
	tg := startNSTarget(t, nsOptions{})
	alice, bob := targetClientset(t, tg, "alice"), targetClientset(t, tg, "bob")

	t.Run("each owner lists exactly their tenants' namespaces", func(t *testing.T) {
		for _, c := range []struct {
			user string
			cs   kubernetes.Interface
			in   []string
			out  []string
		}{{"alice", alice, []string{windA, windB}, []string{solarA}}, {"bob", bob, []string{solarA}, []string{windA, windB}}} {
			eventually(t, time.Minute, func() error {
				got, err := listNamespaceNames(t, c.cs)
				if err != nil {
					return err
				}
				if want := ownedNamespaces(t, c.user, groupsOf(c.user)); !reflect.DeepEqual(got, want) {
					return fmt.Errorf("%s lists %v, want %v", c.user, got, want)
				}
				for _, n := range c.in {
					if !containsStr(got, n) {
						return fmt.Errorf("%s misses %s", c.user, n)
					}
				}
				for _, n := range c.out {
					if containsStr(got, n) {
						return fmt.Errorf("%s sees %s", c.user, n)
					}
				}
				return nil
			})
		}
	})

	t.Run("a watch sees a namespace added later, and no other tenant's", func(t *testing.T) {
		l, err := alice.CoreV1().Namespaces().List(testCtx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := alice.CoreV1().Namespaces().Watch(testCtx(t), metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		bobsLater := createTenantNamespace(t, solar, uniq("solar-later"), linkCapsule).Name
		later := createTenantNamespace(t, wind, uniq("wind-later"), linkCapsule).Name
		waitNamespaceEvent(t, w, watch.Added, later, bobsLater)
	})

	t.Run("create in an owned tenant is labelled; elsewhere 403 and not persisted", func(t *testing.T) {
		name := uniq("wind-by-alice")
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%q:%q}}}`, name, capsulev1beta2.TenantLabel, wind.Name)
		code, resp := tg.Do(t, "alice", "POST", "/api/v1/namespaces", body, nil)
		if code != http.StatusCreated {
			t.Fatalf("alice create in her tenant: %d %s", code, resp)
		}
		ns, err := adminClientset().CoreV1().Namespaces().Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Labels[capsulev1beta2.TenantLabel] != wind.Name || ns.Labels[capsulev1beta2.ProjectTenantLabel] != wind.Name ||
			len(ns.OwnerReferences) != 1 || ns.OwnerReferences[0].UID != wind.UID {
			t.Fatalf("created namespace not tied to %s: labels %v refs %v", wind.Name, ns.Labels, ns.OwnerReferences)
		}
		got, err := listNamespaceNames(t, alice)
		if err != nil || !containsStr(got, name) {
			t.Fatalf("alice's list right after create: %v %v", got, err)
		}
		stray := uniq("bob-in-wind")
		body = fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%q:%q}}}`, stray, capsulev1beta2.TenantLabel, wind.Name)
		code, resp = tg.Do(t, "bob", "POST", "/api/v1/namespaces", body, nil)
		if code != http.StatusForbidden || status(t, resp).Reason != metav1.StatusReasonForbidden {
			t.Fatalf("bob create in alice's tenant: %d %s", code, resp)
		}
		if _, err := adminClientset().CoreV1().Namespaces().Get(testCtx(t), stray, metav1.GetOptions{}); err == nil {
			t.Fatalf("forbidden namespace %s was persisted", stray)
		}
	})

	t.Run("named GET of an invisible namespace is 404", func(t *testing.T) {
		for _, name := range []string{solarA, uniq("missing")} {
			code, body := tg.Do(t, "alice", "GET", "/api/v1/namespaces/"+name, "", nil)
			st := status(t, body)
			if code != http.StatusNotFound || st.Reason != metav1.StatusReasonNotFound || st.Message != fmt.Sprintf("namespaces %q not found", name) {
				t.Fatalf("alice GET %s: %d %s", name, code, body)
			}
		}
		if code, body := tg.Do(t, "alice", "GET", "/api/v1/namespaces/"+windA, "", nil); code != http.StatusOK {
			t.Fatalf("alice GET her namespace: %d %s", code, body)
		}
		if _, err := tg.Kubectl(t, "alice", "get", "ns", solarA); err == nil || !strings.Contains(err.Error(), "NotFound") && !strings.Contains(err.Error(), "not found") {
			t.Fatalf("kubectl get ns %s as alice: %v", solarA, err)
		}
	})

	t.Run("kubectl get ns columns equal the kube-apiserver's", func(t *testing.T) {
		out, err := tg.Kubectl(t, "bob", "get", "ns")
		if err != nil {
			t.Fatal(err)
		}
		want := ownedNamespaces(t, "bob", groupsOf("bob"))
		direct, err := runKubectl(t, fx.Kubeconfig(), "get", "ns", "-l", "kubernetes.io/metadata.name in ("+strings.Join(want, ",")+")")
		if err != nil {
			t.Fatal(err)
		}
		if a, b := columns(out, 2), columns(direct, 2); !reflect.DeepEqual(a, b) {
			t.Fatalf("kubectl get ns through the filter:\n%s\ndirect:\n%s", out, direct)
		}
	})
}

// columns keeps the first n whitespace-separated fields of every line
// (AGE may tick between two runs).
func columns(out string, n int) []string {
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > n {
			f = f[:n]
		}
		rows = append(rows, strings.Join(f, " "))
	}
	return rows
}

func waitNamespaceEvent(t *testing.T, w watch.Interface, typ watch.EventType, name, forbidden string) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %s %s", typ, name)
			}
			var meta metav1.Object
			switch o := ev.Object.(type) {
			case *corev1.Namespace:
				meta = o
			case *unstructured.Unstructured:
				meta = o
			default:
				continue
			}
			if meta.GetName() == forbidden {
				t.Fatalf("watch leaked %s %s", ev.Type, forbidden)
			}
			if ev.Type == typ && meta.GetName() == name {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event for %s", typ, name)
		}
	}
}
