package tenantfilter

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// attackRow is one attempt of the outside attack review (issue 15): what
// was tried, and a check that fails if the attack succeeded.
type attackRow struct {
	id, desc string
	run      func(t *testing.T)
}

// TestTenantFilterAttacks is the attack review of the tenant filter: the
// attacker is alice (owner of tenant wind), any authenticated user of the
// downstream, someone reaching the standalone listener's port, or a hub
// user (through the hub). Every row fails if its attack succeeds.
func TestTenantFilterAttacks(t *testing.T) {
	// The world: alice owns wind; bob owns solar; tenant-group-x owns grp;
	// plain is nobody's.
	wind := createTenant(t, newTenant(uniq("atk-wind"), userOwner("alice")))
	solar := createTenant(t, newTenant(uniq("atk-solar"), userOwner("bob")))
	grp := createTenant(t, newTenant(uniq("atk-grp"), groupOwner(tenantGroupX)))
	windNS := createTenantNamespace(t, wind, uniq("atk-wind-a"), linkCapsule).Name
	solarNS := createTenantNamespace(t, solar, uniq("atk-solar-a"), linkCapsule).Name
	solarProj := createTenantNamespace(t, solar, uniq("atk-solar-p"), linkProject).Name
	grpNS := createTenantNamespace(t, grp, uniq("atk-grp-a"), linkCapsule).Name
	plainNS := createNamespace(t, nsObj(uniq("atk-plain"))).Name
	if _, err := adminClientset().CoreV1().ConfigMaps(solarNS).Create(testCtx(t),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "secret-plans"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Foreign namespace names; tenant names are checked by the Tenant
	// rows only (alice may name solar in her own objects' ownerReferences).
	foreign := []string{solarNS, solarProj, grpNS, plainNS}

	// Grants: a fresh owner of a tenant whose nodes need two labels.
	gOwner := freshUser(t)
	pool := uniq("atk-pool")
	nodeBoth, nodeHalf, nodeOther := pool+"-both", pool+"-half", pool+"-other"
	createNode(t, nodeBoth, map[string]string{"pool": pool, "zone": "z1"})
	createNode(t, nodeHalf, map[string]string{"pool": pool})
	createNode(t, nodeOther, map[string]string{"pool": "x-" + pool, "zone": "z1"})
	gt := newTenant(uniq("atk-gt"), userOwner(gOwner, kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation)))
	gt.Spec.NodeSelector = map[string]string{"pool": pool, "zone": "z1"}
	gt = createTenant(t, gt)
	gtNS := createTenantNamespace(t, gt, uniq("atk-gt-ns"), linkCapsule).Name
	// A second fresh owner with no class grants at all.
	bare := freshUser(t)
	bareT := createTenant(t, newTenant(uniq("atk-bare"), userOwner(bare)))
	bareNS := createTenantNamespace(t, bareT, uniq("atk-bare-ns"), linkCapsule).Name
	// A namespace outside any tenant where bare is admin anyway.
	bareFree := createNamespace(t, nsObj(uniq("atk-bare-free"))).Name
	createRoleBinding(t, bareFree, "admin", "tenant-admin", nil, userSubject(bare))

	clientCA, otherCA := newTestCA(t, "atk-client-ca"), newTestCA(t, "atk-other-ca")
	rec, recKC := startRecorder(t)
	p := startProxy(t, proxyOptions{TLS: true, Kubeconfig: recKC, Args: []string{"--client-ca", clientCA.CertFile}})
	xfccUntrusted := startProxy(t, proxyOptions{TLS: true, Args: []string{"--auth-preferred-types=XForwardedClientCert,BearerToken",
		"--client-ca", clientCA.CertFile, "--trusted-proxy-cidrs=10.0.0.0/8"}})
	xfccTrusted := startProxy(t, proxyOptions{TLS: true, Args: []string{"--auth-preferred-types=XForwardedClientCert",
		"--client-ca", clientCA.CertFile, "--trusted-proxy-cidrs=127.0.0.0/8"}})
	reflector := startProxy(t, proxyOptions{TLS: true, Args: []string{"--enable-reflector"}})
	allNS := startProxy(t, proxyOptions{TLS: true, Args: []string{"--feature-gates=ProxyAllNamespaced=true"}})

	// noLeak fails if body names any foreign namespace or tenant.
	noLeak := func(t *testing.T, what, body string, extra ...string) {
		t.Helper()
		for _, n := range append(append([]string{}, foreign...), extra...) {
			if i := strings.Index(body, n); i >= 0 {
				t.Fatalf("%s leaks %q: ...%s...", what, n, body[max(0, i-300):min(len(body), i+200)])
			}
		}
	}
	notOK := func(t *testing.T, what string, code int, body string) {
		t.Helper()
		if code >= 200 && code < 300 {
			t.Fatalf("%s: %d (want a refusal): %.800s", what, code, body)
		}
	}
	listAs := func(t *testing.T, tg *proxy, user, q string, h http.Header) (int, string) {
		t.Helper()
		return atkDo(t, tg, user, http.MethodGet, "/api/v1/namespaces"+q, "", h)
	}
	// Warm up: alice sees wind.
	eventually(t, time.Minute, func() error {
		code, body := listAs(t, p, "alice", "", nil)
		if code != 200 || !strings.Contains(body, windNS) {
			return fmt.Errorf("alice list: %d %.300s", code, body)
		}
		return nil
	})
	eventually(t, time.Minute, func() error {
		code, body := atkDo(t, p, gOwner, http.MethodGet, "/api/v1/nodes", "", nil)
		if code != 200 || !strings.Contains(body, nodeBoth) {
			return fmt.Errorf("grants owner list nodes: %d %.300s", code, body)
		}
		return nil
	})

	// watchBody runs a bounded watch as user and, while it runs, creates a
	// namespace in solar; it returns the whole stream.
	watchBody := func(t *testing.T, tg *proxy, user, path string) (int, string) {
		t.Helper()
		type res struct {
			code int
			body string
		}
		ch := make(chan res, 1)
		go func() {
			code, body := atkDo(t, tg, user, http.MethodGet, path, "", nil)
			ch <- res{code, body}
		}()
		time.Sleep(time.Second)
		late := createTenantNamespace(t, solar, uniq("atk-solar-late"), linkCapsule).Name
		foreign = append(foreign, late)
		r := <-ch
		return r.code, r.body
	}

	rows := []attackRow{
		{"tf:1", "alice lists namespaces: only wind's, none of solar, the group tenant or plain", func(t *testing.T) {
			code, body := listAs(t, p, "alice", "", nil)
			expectCode(t, "list", code, body, 200)
			noLeak(t, "list", body, "kube-system")
		}},
		{"tf:2", "labelSelector naming solar's tenant label: must not widen the injected selector", func(t *testing.T) {
			for _, sel := range []string{
				capsulev1beta2.TenantLabel + "=" + solar.Name,
				capsulev1beta2.TenantLabel + " in (" + wind.Name + "," + solar.Name + ")",
				"!" + capsulev1beta2.TenantLabel,
				capsulev1beta2.TenantLabel + "!=" + wind.Name,
				capsulev1beta2.ProjectTenantLabel + "=" + solar.Name,
				"kubernetes.io/metadata.name=" + solarNS,
				"kubernetes.io/metadata.name in (" + solarNS + "," + windNS + ")",
			} {
				code, body := listAs(t, p, "alice", "?labelSelector="+urlq(sel), nil)
				if code == 200 {
					noLeak(t, "labelSelector "+sel, body, "kube-system")
				}
			}
		}},
		{"tf:3", "fieldSelector metadata.name=<solar ns> (and an OR-ish list via commas)", func(t *testing.T) {
			for _, sel := range []string{"metadata.name=" + solarNS, "metadata.name!=" + windNS, "metadata.name=" + solarNS + ",metadata.name!=x"} {
				code, body := listAs(t, p, "alice", "?fieldSelector="+urlq(sel), nil)
				if code == 200 {
					noLeak(t, "fieldSelector "+sel, body, "kube-system")
				}
			}
		}},
		{"tf:4", "duplicate labelSelector/fieldSelector query parameters (first one wins downstream?)", func(t *testing.T) {
			for _, q := range []string{
				"?labelSelector=" + urlq(capsulev1beta2.TenantLabel+"="+solar.Name) + "&labelSelector=" + urlq(capsulev1beta2.TenantLabel+"="+wind.Name),
				"?labelSelector=&labelSelector=" + urlq("!nope"),
				"?fieldSelector=" + urlq("metadata.name="+solarNS) + "&fieldSelector=" + urlq("metadata.name="+windNS),
				"?labelselector=" + urlq(capsulev1beta2.TenantLabel+"="+solar.Name),
			} {
				code, body := listAs(t, p, "alice", q, nil)
				if code == 200 {
					noLeak(t, "query "+q, body, "kube-system")
				}
			}
		}},
		{"tf:5", "named GET of foreign namespaces: 404 for solar's, the group's, plain, kube-system and a missing one alike (no 403/404 oracle)", func(t *testing.T) {
			missing := uniq("atk-missing")
			var msgs []string
			for _, n := range []string{solarNS, solarProj, grpNS, plainNS, "kube-system", missing} {
				code, body := atkDo(t, p, "alice", http.MethodGet, "/api/v1/namespaces/"+n, "", nil)
				expectCode(t, "get "+n, code, body, 404)
				st := status(t, body)
				msgs = append(msgs, strings.ReplaceAll(st.Message, n, "X")+"|"+string(st.Reason))
			}
			for _, m := range msgs[1:] {
				if m != msgs[0] {
					t.Fatalf("answers differ: %q vs %q", msgs[0], m)
				}
			}
		}},
		{"tf:6", "list watch (resourceVersion=0, and allowWatchBookmarks) while solar gains a namespace: no foreign events", func(t *testing.T) {
			code, body := watchBody(t, p, "alice", "/api/v1/namespaces?watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=4")
			expectCode(t, "watch", code, body, 200)
			noLeak(t, "watch", body, "kube-system")
		}},
		{"tf:7", "watch from an old resourceVersion (1) and sendInitialEvents streaming list", func(t *testing.T) {
			for _, q := range []string{
				"?watch=true&resourceVersion=1&timeoutSeconds=2",
				"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2",
				"?resourceVersion=1&resourceVersionMatch=NotOlderThan",
				"?resourceVersion=0",
			} {
				code, body := listAs(t, p, "alice", q, nil)
				if code == 200 {
					noLeak(t, "query "+q, body, "kube-system")
				}
			}
		}},
		{"tf:8", "?watch=1 on a foreign namespace's named path, and /api/v1/watch/namespaces[/name]", func(t *testing.T) {
			for _, path := range []string{
				"/api/v1/namespaces/" + solarNS + "?watch=1&timeoutSeconds=2",
				"/api/v1/namespaces?watch=1&fieldSelector=" + urlq("metadata.name="+solarNS) + "&timeoutSeconds=2",
				"/api/v1/watch/namespaces/" + solarNS + "?timeoutSeconds=2",
				"/api/v1/watch/namespaces?timeoutSeconds=2",
			} {
				code, body := atkDo(t, p, "alice", http.MethodGet, path, "", nil)
				if code == 200 {
					noLeak(t, path, body, "kube-system")
				}
			}
		}},
		{"tf:9", "Table output (as=Table) and PartialObjectMetadataList, protobuf and YAML Accept", func(t *testing.T) {
			for _, accept := range []string{
				"application/json;as=Table;v=v1;g=meta.k8s.io",
				"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
				"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
				"application/vnd.kubernetes.protobuf",
				"application/yaml",
				"application/cbor",
			} {
				for _, path := range []string{"/api/v1/namespaces", "/api/v1/namespaces/" + solarNS} {
					code, body := atkDo(t, p, "alice", http.MethodGet, path, "", http.Header{"Accept": {accept}})
					if code == 200 {
						noLeak(t, accept+" "+path, body, "kube-system")
					}
				}
			}
		}},
		{"tf:10", "paging: limit=1 and following continue tokens yields only wind's namespaces", func(t *testing.T) {
			cont := ""
			for i := 0; i < 200; i++ {
				q := "?limit=1"
				if cont != "" {
					q += "&continue=" + urlq(cont)
				}
				code, body := listAs(t, p, "alice", q, nil)
				if code != 200 {
					return
				}
				noLeak(t, "page", body, "kube-system")
				var l metav1.List
				_ = json.Unmarshal([]byte(body), &l)
				if cont = l.Continue; cont == "" {
					return
				}
			}
		}},
		{"tf:11", "alice creates a namespace labelled (and ownerReferenced) into solar: bob must not gain it, the label must not stick", func(t *testing.T) {
			for i, mk := range []func(n string) string{
				func(n string) string {
					return fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%q:%q}}}`, n, capsulev1beta2.TenantLabel, solar.Name)
				},
				func(n string) string {
					return fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%q:%q}}}`, n, capsulev1beta2.ProjectTenantLabel, solar.Name)
				},
				func(n string) string {
					return fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"ownerReferences":[{"apiVersion":"capsule.clastix.io/v1beta2","kind":"Tenant","name":%q,"uid":%q}]}}`, n, solar.Name, solar.UID)
				},
			} {
				n := uniq(fmt.Sprintf("atk-spoof%d", i))
				code, body := atkDo(t, p, "alice", http.MethodPost, "/api/v1/namespaces", mk(n), nil)
				t.Logf("create %s: %d %.200s", n, code, body)
				if got, err := adminClientset().CoreV1().Namespaces().Get(testCtx(t), n, metav1.GetOptions{}); err == nil {
					t.Logf("  stored: labels %v ownerReferences %s", got.Labels, pretty(got.OwnerReferences))
					if got.Labels[capsulev1beta2.TenantLabel] == solar.Name || got.Labels[capsulev1beta2.ProjectTenantLabel] == solar.Name {
						t.Fatalf("alice's namespace %s carries solar's tenant label", n)
					}
					for _, r := range got.OwnerReferences {
						if r.Kind == "Tenant" && r.Name == solar.Name && r.Controller != nil && *r.Controller {
							t.Fatalf("alice's namespace %s is controlled by solar", n)
						}
					}
				}
				time.Sleep(2 * time.Second)
				_, bl := listAs(t, p, "bob", "", nil)
				if strings.Contains(bl, `"`+n+`"`) {
					t.Fatalf("alice's namespace %s landed in bob's tenant (create answered %d)", n, code)
				}
			}
		}},
		{"tf:12", "alice patches a solar namespace's tenant label to wind (merge patch, server-side apply, dry-run, update)", func(t *testing.T) {
			merge := http.Header{"Content-Type": {"application/merge-patch+json"}}
			apply := http.Header{"Content-Type": {"application/apply-patch+yaml"}}
			lbl := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, capsulev1beta2.TenantLabel, wind.Name)
			for _, c := range []struct {
				method, path, body string
				h                  http.Header
			}{
				{http.MethodPatch, "/api/v1/namespaces/" + solarNS, lbl, merge},
				{http.MethodPatch, "/api/v1/namespaces/" + solarNS + "?dryRun=All", lbl, merge},
				{http.MethodPatch, "/api/v1/namespaces/" + solarNS + "?fieldManager=atk&force=true",
					fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%q:%q}}}`, solarNS, capsulev1beta2.TenantLabel, wind.Name), apply},
				{http.MethodPut, "/api/v1/namespaces/" + plainNS,
					fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"labels":{%q:%q}}}`, plainNS, capsulev1beta2.TenantLabel, wind.Name), nil},
				{http.MethodPatch, "/api/v1/namespaces/" + grpNS + "/status", lbl, merge},
				{http.MethodDelete, "/api/v1/namespaces/" + solarNS + "?dryRun=All", "", nil},
			} {
				code, body := atkDo(t, p, "alice", c.method, c.path, c.body, c.h)
				notOK(t, c.method+" "+c.path, code, body)
			}
			for _, n := range []string{solarNS, plainNS, grpNS} {
				ns, err := adminClientset().CoreV1().Namespaces().Get(testCtx(t), n, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ns.Labels[capsulev1beta2.TenantLabel] == wind.Name || ns.DeletionTimestamp != nil {
					t.Fatalf("namespace %s changed: %v", n, ns.Labels)
				}
			}
		}},
		{"tf:13", "alice adds projectcapsule.dev/tenant=solar to her own namespace (capsule label stays wind): refused, so no reader takes it for solar's", func(t *testing.T) {
			mine := createTenantNamespace(t, wind, uniq("atk-wind-move"), linkLabel).Name
			code, body := atkDo(t, p, "alice", http.MethodPatch, "/api/v1/namespaces/"+mine,
				fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, capsulev1beta2.ProjectTenantLabel, solar.Name), http.Header{"Content-Type": {"application/merge-patch+json"}})
			t.Logf("relabel own namespace: %d %.200s", code, body)
			// Undo it whatever happened: the fixture is shared, and other
			// tests compute visibility from either label.
			t.Cleanup(func() {
				_, _ = adminClientset().CoreV1().Namespaces().Patch(context.Background(), mine, "application/merge-patch+json",
					[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, capsulev1beta2.ProjectTenantLabel)), metav1.PatchOptions{})
			})
			notOK(t, "an owner labels her namespace with solar's projectcapsule.dev/tenant", code, body)
			if code == 200 {
				_, bb := listAs(t, p, "bob", "", nil)
				if strings.Contains(bb, `"`+mine+`"`) {
					t.Errorf("alice pushed her namespace %s into bob's view by relabelling", mine)
				}
			}
			// Whatever happened to her own namespace, solar's stay hidden.
			_, lb := listAs(t, p, "alice", "", nil)
			noLeak(t, "list after relabel", lb)
			code, body = atkDo(t, p, "alice", http.MethodGet, "/api/v1/namespaces/"+solarNS+"/configmaps", "", nil)
			notOK(t, "solar configmaps", code, body)
		}},
		{"tf:14", "read foreign Tenants: list, named GET, watch, table", func(t *testing.T) {
			base := "/apis/capsule.clastix.io/v1beta2/tenants"
			for _, path := range []string{base, base + "/" + solar.Name, base + "/" + grp.Name, base + "?watch=true&timeoutSeconds=2",
				base + "?labelSelector=" + urlq("kubernetes.io/metadata.name="+solar.Name), base + "?fieldSelector=" + urlq("metadata.name="+solar.Name),
				"/apis/capsule.clastix.io/v1beta1/tenants", "/apis/capsule.clastix.io/v1beta1/tenants/" + solar.Name} {
				code, body := atkDo(t, p, "alice", http.MethodGet, path, "", nil)
				if code == 200 {
					noLeak(t, path, body, solar.Name, grp.Name)
				}
			}
			code, body := atkDo(t, p, "alice", http.MethodGet, base, "", http.Header{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}})
			if code == 200 {
				noLeak(t, "tenant table", body, solar.Name, grp.Name)
			}
		}},
		{"tf:15", "forged XFCC from an untrusted address (with and without a token, with X-Forwarded-For naming a trusted IP)", func(t *testing.T) {
			bobCert, _ := clientCA.clientCert(t, "bob", capsuleGroup)
			for _, h := range []http.Header{
				{"X-Forwarded-Client-Cert": {xfcc(bobCert)}},
				{"X-Forwarded-Client-Cert": {xfcc(bobCert)}, "X-Forwarded-For": {"10.1.2.3"}, "X-Real-Ip": {"10.1.2.3"}},
				{"x-forwarded-client-cert": {xfcc(bobCert)}},
			} {
				code, body := atkDo(t, xfccUntrusted, "", http.MethodGet, "/api/v1/namespaces", "", h)
				expectCode(t, "anonymous forged XFCC", code, body, 401)
				code, body = atkDo(t, xfccUntrusted, "alice", http.MethodGet, "/api/v1/namespaces", "", h)
				if code == 200 {
					if strings.Contains(body, solarNS) {
						t.Fatalf("alice's token plus bob's forged XFCC shows bob's namespaces")
					}
				}
			}
		}},
		{"tf:16", "XFCC from a trusted address with a foreign CA's cert, a cert chained only by an attacker-supplied intermediate in the header, and garbage", func(t *testing.T) {
			foreignCert, _ := otherCA.clientCert(t, "bob", capsuleGroup, "system:masters")
			goodCert, _ := clientCA.clientCert(t, "alice", capsuleGroup)
			for name, v := range map[string]string{
				"foreign CA":                      xfcc(foreignCert),
				"chain with foreign CA":           `Hash=a;Cert="` + urlq(string(foreignCert)) + `";Chain="` + urlq(string(foreignCert)+string(otherCA.CertPEM)) + `"`,
				"two elements, good then foreign": xfcc(goodCert) + "," + xfcc(foreignCert),
				"garbage":                         `Cert="-----BEGIN CERTIFICATE-----x"`,
				"By= only":                        `By=spiffe://cluster.local/ns/x/sa/bob;Hash=1;Subject="CN=bob,O=system:masters";URI=spiffe://x`,
			} {
				code, body := atkDo(t, xfccTrusted, "", http.MethodGet, "/api/v1/namespaces/"+solarNS+"/configmaps", "", http.Header{"X-Forwarded-Client-Cert": {v}})
				notOK(t, "XFCC "+name, code, body)
			}
		}},
		{"tf:17", "TLS client certificate from a foreign CA claiming bob/system:masters", func(t *testing.T) {
			certPEM, keyPEM := otherCA.clientCert(t, "bob", capsuleGroup, "system:masters")
			c := tlsClient(t, p, certPEM, keyPEM)
			resp, err := c.Get(p.URL + "/api/v1/namespaces/" + solarNS + "/configmaps")
			if err != nil {
				return // handshake refused: fine
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			notOK(t, "foreign client cert", resp.StatusCode, string(b))
		}},
		{"tf:18", "Impersonate-* smuggling without the right: case variants, multiple values, comma lists, Uid, Extra", func(t *testing.T) {
			path := "/api/v1/namespaces/" + solarNS + "/configmaps"
			for _, h := range []http.Header{
				{"impersonate-user": {"bob"}},
				{"IMPERSONATE-USER": {"bob"}},
				{"Impersonate-User": {"alice", "bob"}},
				{"Impersonate-Group": {"system:masters"}},
				{"Impersonate-Group": {capsuleGroup, "system:masters"}},
				{"Impersonate-Group": {capsuleGroup + ",system:masters"}},
				{"Impersonate-User": {"alice"}, "Impersonate-Group": {"system:masters"}, "Impersonate-Uid": {"0"}},
				{"Impersonate-User": {"system:admin"}, "Impersonate-Extra-Scopes": {"*"}},
				{"Impersonate-Uid": {"bob"}},
				{"Impersonate-User": {"system:serviceaccount:kube-system:default"}},
			} {
				code, body := atkDo(t, p, "alice", http.MethodGet, path, "", h)
				notOK(t, fmt.Sprint(h), code, body)
			}
		}},
		{"tf:19", "alice impersonates the group owning another tenant (tenant-group-x): namespace list stays hers", func(t *testing.T) {
			for _, h := range []http.Header{
				{"Impersonate-User": {"alice"}, "Impersonate-Group": {tenantGroupX, capsuleGroup}},
				{"Impersonate-User": {"erin"}, "Impersonate-Group": {tenantGroupX, capsuleGroup}},
				{"Impersonate-User": {"bob"}},
			} {
				code, body := listAs(t, p, "alice", "", h)
				if code == 200 {
					noLeak(t, fmt.Sprint(h), body, "kube-system")
				}
			}
		}},
		{"tf:20", "Connection header naming Authorization / Impersonate / X-Remote-*; X-Remote-User and X-Remote-Group front-proxy headers", func(t *testing.T) {
			path := "/api/v1/namespaces/" + solarNS + "/configmaps"
			for _, h := range []http.Header{
				{"Connection": {"Authorization"}},
				{"Connection": {"X-Remote-User"}, "X-Remote-User": {"bob"}},
				{"X-Remote-User": {"bob"}, "X-Remote-Group": {"system:masters"}},
				{"X-Remote-User": {"system:admin"}, "X-Remote-Extra-Scopes": {"*"}},
				{"Connection": {"keep-alive, Impersonate-Group"}, "Impersonate-Group": {"system:masters"}},
			} {
				code, body := atkDo(t, p, "alice", http.MethodGet, path, "", h)
				notOK(t, fmt.Sprint(h), code, body)
				code, body = atkDo(t, p, "", http.MethodGet, path, "", h)
				notOK(t, "anonymous "+fmt.Sprint(h), code, body)
			}
			for _, r := range rec.requests(path) {
				for k := range r.Header {
					if strings.HasPrefix(k, "X-Remote-") {
						t.Fatalf("forwarded %s downstream", k)
					}
				}
			}
		}},
		{"tf:21", "anonymous, Basic, malformed and doubled Authorization: never the provider's own credential", func(t *testing.T) {
			path := "/api/v1/namespaces/" + solarNS + "/configmaps"
			bobTok, aliceTok := fx.Token(t, "bob"), fx.Token(t, "alice")
			for name, h := range map[string]http.Header{
				"none":            {},
				"basic":           {"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("admin:admin"))}},
				"empty bearer":    {"Authorization": {"Bearer "}},
				"bearer no space": {"Authorization": {"Bearer"}},
				"lowercase":       {"Authorization": {"bearer garbage"}},
				"alice then bob":  {"Authorization": {"Bearer " + aliceTok, "Bearer " + bobTok}},
				"bad ws subprotocol token plus alice": {"Authorization": {"Bearer " + aliceTok},
					"Sec-Websocket-Protocol": {"base64url.bearer.authorization.k8s.io.!!!", "base64.binary.k8s.io"}},
				"ws subprotocol empty": {"Sec-Websocket-Protocol": {"base64url.bearer.authorization.k8s.io."}},
			} {
				code, body := atkDo(t, p, "", http.MethodGet, path, "", h)
				if name == "alice then bob" && code == 200 {
					t.Fatalf("two tokens gave bob's access to solar: %s", body)
				}
				if name != "alice then bob" && name != "bad ws subprotocol token plus alice" {
					expectCode(t, name, code, body, 401)
				} else {
					notOK(t, name, code, body)
				}
				code, body = atkDo(t, p, "", http.MethodGet, "/api/v1/namespaces", "", h)
				if code == 200 {
					noLeak(t, name+" list", body, "kube-system")
				}
			}
		}},
		{"tf:22", "token cache: interleaved concurrent alice/bob requests each get their own view", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan string, 100)
			for i := 0; i < 20; i++ {
				for _, u := range []string{"alice", "bob"} {
					wg.Add(1)
					go func(u string) {
						defer wg.Done()
						code, body := listAs(t, p, u, "", nil)
						if code != 200 {
							errs <- fmt.Sprintf("%s: %d", u, code)
							return
						}
						if u == "alice" && strings.Contains(body, solarNS) || u == "bob" && strings.Contains(body, windNS) {
							errs <- fmt.Sprintf("%s saw the other's namespace", u)
						}
					}(u)
				}
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Fatal(e)
			}
		}},
		{"tf:23", "websocket: namespace list watch with the token in the subprotocol is filtered; alice's ws token cannot reach solar's configmaps", func(t *testing.T) {
			d := wsDialer(p, fx.Token(t, "alice"))
			u := "wss" + strings.TrimPrefix(p.URL, "https")
			origin := http.Header{"Origin": {p.URL}}
			conn, _, err := d.Dial(u+"/api/v1/namespaces?watch=true&timeoutSeconds=3", origin)
			if err == nil {
				var all strings.Builder
				_ = conn.SetReadDeadline(time.Now().Add(6 * time.Second))
				for {
					_, msg, err := conn.ReadMessage()
					if err != nil {
						break
					}
					if dec, err := base64.StdEncoding.DecodeString(string(msg)); err == nil {
						msg = dec
					}
					all.Write(msg)
				}
				conn.Close()
				noLeak(t, "ws watch", all.String(), "kube-system")
			}
			conn, resp, err := d.Dial(u+"/api/v1/namespaces/"+solarNS+"/configmaps?watch=true", origin)
			if err == nil {
				_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
				_, msg, rerr := conn.ReadMessage()
				conn.Close()
				if rerr == nil && strings.Contains(string(msg), "secret-plans") {
					t.Fatalf("ws watch of solar's configmaps: %s", msg)
				}
			} else if resp != nil && resp.StatusCode == 200 {
				t.Fatalf("ws handshake answered 200")
			}
		}},
		{"tf:24", "ProxySetting self-grant: the bare owner writes one in her namespace naming herself for Nodes List/Update/Delete", func(t *testing.T) {
			ps := proxySettingJSON(uniq("atk-self"), bareNS, bare, capsulev1beta2.NodesProxy,
				capsulev1beta2.ListOperation, capsulev1beta2.UpdateOperation, capsulev1beta2.DeleteOperation)
			code, body := atkDo(t, p, bare, http.MethodPost, "/apis/capsule.clastix.io/v1beta1/namespaces/"+bareNS+"/proxysettings", ps, nil)
			expectCode(t, "owner writes a ProxySetting", code, body, 201)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				code, body := atkDo(t, p, bare, http.MethodGet, "/api/v1/nodes", "", nil)
				if code == 200 && strings.Contains(body, pool) {
					t.Fatalf("self-granted node list: %.400s", body)
				}
				time.Sleep(500 * time.Millisecond)
			}
			code, body = atkDo(t, p, bare, http.MethodGet, "/api/v1/nodes/"+nodeBoth, "", nil)
			notOK(t, "self-granted node get", code, body)
		}},
		{"tf:25", "ProxySetting outside a tenant namespace (bare is admin of a plain namespace) naming herself for Nodes", func(t *testing.T) {
			ps := proxySettingJSON(uniq("atk-free"), bareFree, bare, capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation)
			code, body := atkDo(t, p, bare, http.MethodPost, "/apis/capsule.clastix.io/v1beta1/namespaces/"+bareFree+"/proxysettings", ps, nil)
			t.Logf("create ProxySetting in plain namespace: %d", code)
			_ = body
			time.Sleep(3 * time.Second)
			code, body = atkDo(t, p, bare, http.MethodGet, "/api/v1/nodes", "", nil)
			if code == 200 && strings.Contains(body, pool) {
				t.Fatalf("a ProxySetting outside a tenant granted nodes: %.400s", body)
			}
		}},
		{"tf:26", "ProxySetting in the grants owner's namespace handing Update/Delete (which the tenant lacks) to himself and to bob", func(t *testing.T) {
			ps := fmt.Sprintf(`{"apiVersion":"capsule.clastix.io/v1beta1","kind":"ProxySetting","metadata":{"name":%q,"namespace":%q},"spec":{"subjects":[`+
				`{"kind":"User","name":%q,"proxySettings":[{"kind":"Nodes","operations":["List","Update","Delete"]}]},`+
				`{"kind":"User","name":"bob","proxySettings":[{"kind":"Nodes","operations":["List","Update","Delete"]},{"kind":"StorageClasses","operations":["List"]}]}]}}`,
				uniq("atk-ps"), gtNS, gOwner)
			code, body := atkDo(t, p, gOwner, http.MethodPost, "/apis/capsule.clastix.io/v1beta1/namespaces/"+gtNS+"/proxysettings", ps, nil)
			expectCode(t, "owner writes ProxySetting", code, body, 201)
			// Wait until bob's List (legitimately delegated) shows.
			eventually(t, time.Minute, func() error {
				code, body := atkDo(t, p, "bob", http.MethodGet, "/api/v1/nodes", "", nil)
				if code != 200 || !strings.Contains(body, nodeBoth) {
					return fmt.Errorf("bob's delegated list: %d", code)
				}
				return nil
			})
			merge := http.Header{"Content-Type": {"application/merge-patch+json"}}
			for _, u := range []string{gOwner, "bob"} {
				code, body := atkDo(t, p, u, http.MethodPatch, "/api/v1/nodes/"+nodeBoth, `{"metadata":{"labels":{"pwned":"yes"}}}`, merge)
				notOK(t, u+" patch node", code, body)
				code, body = atkDo(t, p, u, http.MethodDelete, "/api/v1/nodes/"+nodeBoth+"?dryRun=All", "", nil)
				notOK(t, u+" delete node", code, body)
			}
			code, body = atkDo(t, p, "bob", http.MethodGet, "/apis/storage.k8s.io/v1/storageclasses", "", nil)
			if code == 200 && len(listNames(t, body)) > 0 {
				t.Fatalf("bob got storage classes the tenant never had: %.400s", body)
			}
		}},
		{"tf:27", "GET looser than LIST: a node matching only half of the tenant's nodeSelector, and one matching the other half", func(t *testing.T) {
			code, body := atkDo(t, p, gOwner, http.MethodGet, "/api/v1/nodes", "", nil)
			expectCode(t, "list", code, body, 200)
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{nodeBoth}) {
				t.Fatalf("list = %v, want only %s", got, nodeBoth)
			}
			for _, n := range []string{nodeHalf, nodeOther} {
				code, body := atkDo(t, p, gOwner, http.MethodGet, "/api/v1/nodes/"+n, "", nil)
				notOK(t, "get "+n, code, body)
				code, body = atkDo(t, p, gOwner, http.MethodGet, "/api/v1/nodes?fieldSelector="+urlq("metadata.name="+n), "", nil)
				if code == 200 && len(only(listNames(t, body), pool)) > 0 {
					t.Fatalf("fieldSelector list shows %s", n)
				}
			}
		}},
		{"tf:28", "node list selector widening: labelSelector with an OR set, the negation, duplicate params, watch", func(t *testing.T) {
			for _, q := range []string{
				"?labelSelector=" + urlq("pool in ("+pool+",x-"+pool+")"),
				"?labelSelector=" + urlq("!zone"),
				"?labelSelector=" + urlq("pool="+pool) + "&labelSelector=" + urlq("pool=x-"+pool),
				"?watch=true&timeoutSeconds=2",
				"?watch=true&timeoutSeconds=2&labelSelector=" + urlq("pool"),
			} {
				code, body := atkDo(t, p, gOwner, http.MethodGet, "/api/v1/nodes"+q, "", nil)
				if code == 200 && (strings.Contains(body, `"`+nodeHalf+`"`) || strings.Contains(body, `"`+nodeOther+`"`)) {
					t.Fatalf("nodes%s shows nodes outside the tenant: %.600s", q, body)
				}
			}
		}},
		{"tf:29", "reflection: alice binds tenant-group-x and bob in her namespace; she gains none of their namespaces", func(t *testing.T) {
			rb := rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: uniq("atk-refl"), Namespace: windNS},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tenant-admin"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: tenantGroupX},
					userSubject("bob"), {Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: solarNS}},
			}
			b, _ := json.Marshal(rb)
			code, body := atkDo(t, reflector, "alice", http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+windNS+"/rolebindings", string(b), nil)
			expectCode(t, "alice creates a RoleBinding in her namespace", code, body, 201)
			time.Sleep(2 * time.Second)
			code, body = listAs(t, reflector, "alice", "", nil)
			expectCode(t, "list", code, body, 200)
			noLeak(t, "reflector list", body, "kube-system")
			code, body = atkDo(t, reflector, "alice", http.MethodGet, "/api/v1/namespaces/"+grpNS, "", nil)
			notOK(t, "get group tenant's namespace", code, body)
		}},
		{"tf:30", "path tricks: //api, /api/../apis, dot segments, encoded slashes, trailing slash, case", func(t *testing.T) {
			for _, path := range []string{
				"//api/v1/namespaces",
				"/api//v1/namespaces",
				"/api/v1/namespaces/",
				"/api/v1/./namespaces",
				"/api/v1/x/../namespaces",
				"/apis/../api/v1/namespaces",
				"/api/v1/namespaces%2F",
				"/api/v1/namespaces%2f" + solarNS,
				"/api/v1/namespaces/" + solarNS + "%2F",
				"/api/v1/namespaces/" + solarNS + "/",
				"/api/v1/namespaces/" + windNS + "/../" + solarNS,
				"/api/v1/namespaces/" + windNS + "%2F..%2F" + solarNS,
				"/API/v1/namespaces",
				"/api/v1/Namespaces",
				"/api/v1/namespaces;x=y",
				"/api/v1/namespaces?",
				"/apis/capsule.clastix.io/v1beta2/../v1beta2/tenants",
			} {
				code, body := rawGet(t, p, "alice", path)
				if code == 200 {
					noLeak(t, path, body, "kube-system")
				}
			}
		}},
		{"tf:31", "403→404 oracle: a named GET in a namespace tells 'missing' from 'exists'; but never whose, and no more than POST namespace (409) already tells", func(t *testing.T) {
			missing := uniq("atk-gone")
			var foreignAnswers []string
			for _, n := range []string{solarNS, grpNS, plainNS} {
				code, body := atkDo(t, p, "alice", http.MethodGet, "/api/v1/namespaces/"+n+"/configmaps/cm", "", nil)
				notOK(t, "foreign cm get", code, body)
				foreignAnswers = append(foreignAnswers, fmt.Sprint(code, strings.ReplaceAll(status(t, body).Message, n, "X")))
			}
			for _, a := range foreignAnswers[1:] {
				if a != foreignAnswers[0] {
					t.Fatalf("a foreign tenant's namespace answers differently from a plain one: %q vs %q", foreignAnswers[0], a)
				}
			}
			code, _ := atkDo(t, p, "alice", http.MethodGet, "/api/v1/namespaces/"+missing+"/configmaps/cm", "", nil)
			t.Logf("missing namespace: %d; existing foreign: %s (existence is already told by the downstream: POST below)", code, foreignAnswers[0])
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, solarNS)
			c2, b2 := atkDo(t, p, "alice", http.MethodPost, "/api/v1/namespaces?dryRun=All", body, nil)
			t.Logf("dry-run create of solar's namespace: %d %.200s", c2, b2)
		}},
		{"tf:32", "metrics, healthz and readyz leak no tenant or namespace names (listener and metrics address)", func(t *testing.T) {
			for _, n := range []string{solarNS, grpNS, "no-such-" + solarNS} {
				atkDo(t, p, "alice", http.MethodGet, "/api/v1/namespaces/"+n, "", nil)
				atkDo(t, p, "alice", http.MethodGet, "/api/v1/namespaces/"+n+"/configmaps/x", "", nil)
			}
			hc := p.httpClient()
			for _, u := range []string{p.URL + "/metrics", p.URL + "/healthz?verbose", p.URL + "/readyz?verbose", p.URL + "/livez?verbose",
				p.MetricsURL + "/metrics", p.MetricsURL + "/healthz?verbose", p.MetricsURL + "/readyz?verbose", p.MetricsURL + "/debug/pprof/"} {
				resp, err := hc.Get(u)
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				noLeak(t, u, string(b), windNS, wind.Name, "no-such-")
				if strings.HasSuffix(u, "/debug/pprof/") && resp.StatusCode == 200 {
					t.Fatalf("pprof open on %s", u)
				}
			}
		}},
		{"tf:33", "non-tenant users (mallory: no Capsule group; oscar) listing namespaces get the downstream's own 403, not the provider's view", func(t *testing.T) {
			for _, u := range []string{"mallory", "oscar"} {
				code, body := listAs(t, p, u, "", nil)
				notOK(t, u+" list", code, body)
				code, body = atkDo(t, p, u, http.MethodGet, "/apis/capsule.clastix.io/v1beta2/tenants", "", nil)
				notOK(t, u+" tenants", code, body)
				code, body = atkDo(t, p, u, http.MethodGet, "/api/v1/nodes", "", nil)
				notOK(t, u+" nodes", code, body)
			}
		}},
		{"tf:34", "HTTP smuggling: absolute-form request URI naming another host, Host header games", func(t *testing.T) {
			for _, line := range []string{
				"GET https://evil.example/api/v1/namespaces HTTP/1.1",
				"GET /api/v1/namespaces HTTP/1.1\r\nX-Forwarded-Host: evil",
				"GET http://127.0.0.1/api/v1/namespaces/" + solarNS + " HTTP/1.1",
			} {
				code, body := rawRequest(t, p, fx.Token(t, "alice"), line)
				if code == 200 {
					noLeak(t, line, body, "kube-system")
				}
			}
		}},
		{"tf:41", "reviews forwarded with the provider's credential? alice creates a SubjectAccessReview for system:admin and a TokenReview of bob's token", func(t *testing.T) {
			sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"bob","groups":["system:masters"],"resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"` + solarNS + `"}}}`
			code, body := atkDo(t, p, "alice", http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar, nil)
			notOK(t, "SubjectAccessReview", code, body)
			tr := `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + fx.Token(t, "bob") + `"}}`
			code, body = atkDo(t, p, "alice", http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", tr, nil)
			notOK(t, "TokenReview", code, body)
			lsar := `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"` + solarNS + `"},"spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"` + solarNS + `"}}}`
			code, body = atkDo(t, p, "alice", http.MethodPost, "/apis/authorization.k8s.io/v1/namespaces/"+solarNS+"/localsubjectaccessreviews", lsar, nil)
			notOK(t, "LocalSubjectAccessReview in solar", code, body)
			ssrr := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"` + solarNS + `"}}`
			code, body = atkDo(t, p, "alice", http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", ssrr, nil)
			if code == 201 && strings.Contains(body, `"verbs":["*"]`) {
				t.Fatalf("alice's rules in solar's namespace claim everything: %.400s", body)
			}
		}},
		{"tf:42", "alice writes Tenants and GlobalProxySettings: adds herself as solar's owner, edits wind's nodeSelector, creates a GlobalProxySettings for herself", func(t *testing.T) {
			merge := http.Header{"Content-Type": {"application/merge-patch+json"}}
			code, body := atkDo(t, p, "alice", http.MethodPatch, "/apis/capsule.clastix.io/v1beta2/tenants/"+solar.Name,
				`{"spec":{"owners":[{"kind":"User","name":"alice"},{"kind":"User","name":"bob"}]}}`, merge)
			notOK(t, "patch solar owners", code, body)
			code, body = atkDo(t, p, "alice", http.MethodPatch, "/apis/capsule.clastix.io/v1beta2/tenants/"+wind.Name,
				`{"spec":{"owners":[{"kind":"User","name":"alice","proxySettings":[{"kind":"Nodes","operations":["List","Update","Delete"]}]}]}}`, merge)
			notOK(t, "patch wind grants", code, body)
			gps := `{"apiVersion":"capsule.clastix.io/v1beta1","kind":"GlobalProxySettings","metadata":{"name":"` + uniq("atk-gps") + `"},"spec":{"rules":[{"subjects":[{"kind":"User","name":"alice"}],"clusterResources":[{"apiGroups":["*"],"resources":["*"],"operations":["List"],"selector":{}}]}]}}`
			code, body = atkDo(t, p, "alice", http.MethodPost, "/apis/capsule.clastix.io/v1beta1/globalproxysettings", gps, nil)
			notOK(t, "create GlobalProxySettings", code, body)
			code, body = atkDo(t, p, "alice", http.MethodGet, "/apis/capsule.clastix.io/v1beta2/capsuleconfigurations", "", nil)
			notOK(t, "read CapsuleConfigurations", code, body)
		}},
		{"tf:43", "all-namespaces lists (-A) of configmaps, secrets, pods, events, with and without ProxyAllNamespaced, and with field/label selectors naming solar", func(t *testing.T) {
			for _, tg := range []*proxy{p, allNS} {
				for _, path := range []string{
					"/api/v1/configmaps", "/api/v1/secrets", "/api/v1/pods", "/api/v1/events",
					"/api/v1/configmaps?fieldSelector=" + urlq("metadata.namespace="+solarNS),
					"/api/v1/configmaps?fieldSelector=" + urlq("metadata.namespace!="+windNS),
					"/api/v1/configmaps?fieldSelector=" + urlq("metadata.namespace="+windNS) + "&fieldSelector=" + urlq("metadata.namespace="+solarNS),
					"/api/v1/configmaps?watch=true&timeoutSeconds=2",
					"/api/v1/configmaps?limit=1",
					"/api/v1/serviceaccounts",
				} {
					code, body := atkDo(t, tg, "alice", http.MethodGet, path, "", nil)
					if code == 200 {
						noLeak(t, path, body, "secret-plans", "kube-system")
					}
				}
			}
		}},
		{"tf:45", "owner's namespace mutation (run as the provider) steered at another namespace: dot segments after status/finalize, encoded dots and slashes", func(t *testing.T) {
			mine := createTenantNamespace(t, wind, uniq("atk-wind-mut"), linkCapsule).Name
			steal := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, capsulev1beta2.TenantLabel, wind.Name)
			for _, victim := range []string{plainNS, solarProj, "default"} {
				for _, path := range []string{
					"/api/v1/namespaces/" + mine + "/status/../../" + victim,
					"/api/v1/namespaces/" + mine + "/finalize/../../" + victim,
					"/api/v1/namespaces/" + mine + "/status/%2e%2e/%2e%2e/" + victim,
					"/api/v1/namespaces/" + mine + "/status%2F..%2F..%2F" + victim,
					"/api/v1/namespaces/" + mine + "/status/..%2F..%2F" + victim,
					"/api/v1/namespaces/" + mine + "/x/../../" + victim,
					"/api/v1/namespaces/" + mine + "/../" + victim,
					"/api/v1/namespaces/" + mine + "/status//../../" + victim,
				} {
					code, body := rawDo(t, p, fx.Token(t, "alice"), http.MethodPatch, path, "application/merge-patch+json", steal)
					t.Logf("PATCH %s: %d %.160s", path, code, body)
					if code == 200 && strings.Contains(body, `"name":"`+victim+`"`) {
						t.Errorf("PATCH %s answered with %s's object", path, victim)
					}
				}
				ns, err := adminClientset().CoreV1().Namespaces().Get(testCtx(t), victim, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ns.Labels[capsulev1beta2.TenantLabel] == wind.Name {
					t.Fatalf("alice moved %s into wind: %v", victim, ns.Labels)
				}
			}
			// The same through DELETE (forwarded as the provider at once).
			code, body := rawDo(t, p, fx.Token(t, "alice"), http.MethodDelete, "/api/v1/namespaces/"+mine+"/status/../../"+plainNS+"?dryRun=All", "", "")
			t.Logf("DELETE: %d %.200s", code, body)
			if code == 200 && strings.Contains(body, `"name":"`+plainNS+`"`) {
				t.Fatalf("DELETE steered at %s: %.300s", plainNS, body)
			}
		}},
		{"tf:46", "namespace finalize/status subresources run as the provider? an owner (without namespaces/finalize) deletes her namespace and finalizes it at once, so planted objects outlive it for the next creator of that name", func(t *testing.T) {
			fx.ApplyYAML(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: atk-owner}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: ["*"]}
`)
			fin := freshUser(t)
			finT := createTenant(t, newTenant(uniq("atk-fin"), userOwner(fin)))
			noOwners := finT.DeepCopy()
			noOwners.Spec.Owners = nil
			victim := createTenantNamespace(t, noOwners, uniq("atk-fin-ns"), linkCapsule).Name
			createRoleBinding(t, victim, "owner", "atk-owner", nil, userSubject(fin))
			if _, err := adminClientset().CoreV1().ConfigMaps(victim).Create(testCtx(t),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, func() error {
				if code, body := listAs(t, p, fin, "", nil); code != 200 || !strings.Contains(body, victim) {
					return fmt.Errorf("owner does not see %s yet: %d", victim, code)
				}
				return nil
			})
			code, body := atkDo(t, p, fin, http.MethodDelete, "/api/v1/namespaces/"+victim, "", nil)
			t.Logf("owner deletes her namespace: %d", code)
			_ = body
			// The owner's own view of the object (labels and owner
			// reference kept), with no finalizers left.
			_, cur := atkDo(t, p, fin, http.MethodGet, "/api/v1/namespaces/"+victim, "", nil)
			var nsObj map[string]any
			if err := json.Unmarshal([]byte(cur), &nsObj); err != nil {
				t.Fatalf("get own namespace: %s", cur)
			}
			nsObj["spec"] = map[string]any{"finalizers": []any{}}
			delete(nsObj["metadata"].(map[string]any), "managedFields")
			fb, _ := json.Marshal(nsObj)
			code, body = atkDo(t, p, fin, http.MethodPut, "/api/v1/namespaces/"+victim+"/finalize", string(fb), nil)
			t.Logf("finalize: %d %.200s", code, body)
			c2, b2 := atkDo(t, p, fin, http.MethodPatch, "/api/v1/namespaces/"+victim+"/status",
				`{"status":{"conditions":[{"type":"NamespaceContentRemaining","status":"False","reason":"Forged","message":"written by an owner"}]}}`,
				http.Header{"Content-Type": {"application/merge-patch+json"}})
			t.Logf("status patch: %d %.200s", c2, b2)
			for _, r := range rec.requests("/api/v1/namespaces/" + victim + "/") {
				if u := r.Header.Get("Impersonate-User"); u != fin {
					t.Errorf("%s reached the downstream as %q (the provider's credential), not as the owner", r.Path, u)
				}
			}
			if _, err := adminClientset().CoreV1().Namespaces().Get(testCtx(t), victim, metav1.GetOptions{}); err != nil {
				if cms, err2 := adminClientset().CoreV1().ConfigMaps(victim).List(testCtx(t), metav1.ListOptions{}); err2 == nil && len(cms.Items) > 0 {
					t.Errorf("%s finalized away (%d); its objects remain for the next creator of the name: %d configmaps", victim, code, len(cms.Items))
				}
			}
			notOK(t, "finalize without namespaces/finalize", code, body)
			notOK(t, "status patch without namespaces/status", c2, b2)
		}},
		{"tf:47", "a granted node's subresources (nodes/proxy = the kubelet API, nodes/status) must not run with the provider's credential", func(t *testing.T) {
			for _, c := range []struct{ method, path, body string }{
				{http.MethodGet, "/api/v1/nodes/" + nodeBoth + "/proxy/pods", ""},
				{http.MethodGet, "/api/v1/nodes/" + nodeBoth + "/proxy/configz", ""},
				{http.MethodPost, "/api/v1/nodes/" + nodeBoth + "/proxy/run/" + solarNS + "/p/c?cmd=id", ""},
				{http.MethodGet, "/api/v1/nodes/" + nodeBoth + "/status", ""},
				{http.MethodPatch, "/api/v1/nodes/" + nodeBoth + "/status", `{"status":{"capacity":{"pods":"1"}}}`},
				{http.MethodGet, "/api/v1/proxy/nodes/" + nodeBoth + "/pods", ""},
			} {
				var h http.Header
				if c.method == http.MethodPatch {
					h = http.Header{"Content-Type": {"application/merge-patch+json"}}
				}
				code, body := atkDo(t, p, gOwner, c.method, c.path, c.body, h)
				t.Logf("%s %s: %d %.160s", c.method, c.path, code, body)
			}
			for _, r := range rec.requests("/api/v1/nodes/" + nodeBoth + "/") {
				if u := r.Header.Get("Impersonate-User"); u != gOwner {
					t.Errorf("%s reached the downstream as %q (the provider's credential)", r.Path, u)
				}
			}
			for _, r := range rec.requests("/api/v1/proxy/") {
				if u := r.Header.Get("Impersonate-User"); u != gOwner {
					t.Errorf("%s reached the downstream as %q (the provider's credential)", r.Path, u)
				}
			}
		}},
		{"tf:48", "kubectl describe node's pod list (pods?fieldSelector=spec.nodeName=<granted node>) shows other tenants' pods, with their specs?", func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solar-db", Namespace: solarNS},
				Spec: corev1.PodSpec{NodeName: nodeBoth, Containers: []corev1.Container{{Name: "db", Image: "registry.invalid/db",
					Env: []corev1.EnvVar{{Name: "PASSWORD", Value: "solar-s3cret"}}}}}}
			if _, err := adminClientset().CoreV1().Pods(solarNS).Create(testCtx(t), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{
				"?fieldSelector=" + urlq("spec.nodeName="+nodeBoth),
				"?fieldSelector=" + urlq("spec.nodeName="+nodeBoth+",status.phase!=Succeeded,status.phase!=Failed"),
				"?fieldSelector=" + urlq("spec.nodeName="+nodeBoth+",metadata.namespace="+solarNS),
			} {
				code, body := atkDo(t, p, gOwner, http.MethodGet, "/api/v1/pods"+q, "", nil)
				t.Logf("pods%s: %d", q, code)
				if code == 200 && (strings.Contains(body, "solar-s3cret") || strings.Contains(body, `"solar-db"`)) {
					t.Errorf("the grants owner reads solar's pod on a granted node: %.300s", body)
				}
			}
		}},
		{"tf:40", "--allowed-paths prefixes: /apis-x, /apix, /versionx, and paths outside the list (/metrics, /logs, /debug) never run with the provider's credential", func(t *testing.T) {
			for _, path := range []string{"/apis-x/v1/namespaces", "/apix/v1/namespaces", "/versionx", "/version/../api/v1/namespaces",
				"/metrics", "/logs/", "/debug/pprof/", "/api-x", "/apis/../metrics", "/%61pi/v1/namespaces"} {
				code, body := rawGet(t, p, "alice", path)
				if code == 200 {
					noLeak(t, path, body, "kube-system")
					if strings.Contains(body, "apiserver_request_total") || strings.Contains(body, "kube-apiserver") {
						t.Fatalf("%s answered with the downstream's admin-only content: %.300s", path, body)
					}
				}
			}
			admin := fx.Config().BearerToken
			for _, r := range rec.requests("/") {
				if (strings.HasPrefix(r.Path, "/metrics") || strings.HasPrefix(r.Path, "/logs") || strings.HasPrefix(r.Path, "/debug")) &&
					r.Header.Get("Authorization") == "Bearer "+admin && r.Header.Get("Impersonate-User") == "" {
					t.Fatalf("%s forwarded as the provider itself", r.Path)
				}
			}
		}},
	}
	rows = append(rows, hubRows(t, &foreign, solarNS, windNS)...)

	for _, r := range rows {
		t.Run(r.id+" "+r.desc, r.run)
	}
}

// hubRows are the through-the-hub attempts; they start one hub.
func hubRows(parent *testing.T, foreignp *[]string, solarNS, windNS string) []attackRow {
	// A downstream tenant owned by a downstream ServiceAccount, and the
	// downstream's bootstrap controller identity, for tf:44.
	robotT := createTenant(parent, newTenant(uniq("atk-robot"), saOwner("sa-home", "robot")))
	robotNS := createTenantNamespace(parent, robotT, uniq("atk-robot-ns"), linkCapsule).Name
	// Started on the parent test: its temporary directory names the hub's
	// plugin socket, which must stay short.
	rec, kc := startRecorder(parent)
	h := startHub(parent, kc)
	hub := func(*testing.T) *hubProc { return h }
	noLeak := func(t *testing.T, what, body string) {
		t.Helper()
		for _, n := range append(append([]string{}, *foreignp...), "kube-system") {
			if strings.Contains(body, n) {
				t.Fatalf("%s leaks %q: %.600s", what, n, body)
			}
		}
	}
	return []attackRow{
		{"tf:44", "through the hub: a hub user mints a ServiceAccount token in their own home workspace named like a downstream ServiceAccount (a tenant owner; a kube-system controller): it must not act as that downstream identity", func(t *testing.T) {
			h := hub(t)
			code, body := h.send("mallory", http.MethodGet, h.URL+"/api/whoami", "")
			expectCode(t, "whoami", code, body, 200)
			var who struct {
				Home struct{ Path string } `json:"home"`
			}
			_ = json.Unmarshal([]byte(body), &who)
			if who.Home.Path == "" {
				t.Fatalf("mallory has no home: %s", body)
			}
			ws := h.URL + "/clusters/" + who.Home.Path
			token := func(ns, name string) string {
				h.send("mallory", http.MethodPost, ws+"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`)
				code, body := h.send("mallory", http.MethodPost, ws+"/api/v1/namespaces/"+ns+"/serviceaccounts",
					`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"`+name+`"}}`)
				if code != 201 && code != 409 {
					t.Fatalf("create SA %s/%s in mallory's home: %d %s", ns, name, code, body)
				}
				code, body = h.send("mallory", http.MethodPost, ws+"/api/v1/namespaces/"+ns+"/serviceaccounts/"+name+"/token",
					`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
				var tr struct {
					Status struct{ Token string } `json:"status"`
				}
				if err := json.Unmarshal([]byte(body), &tr); err != nil || tr.Status.Token == "" {
					t.Fatalf("token for %s/%s: %d %s", ns, name, code, body)
				}
				return tr.Status.Token
			}
			// As admin of her home, mallory lets her service accounts use it.
			code, body = h.send("mallory", http.MethodPost, ws+"/apis/rbac.authorization.k8s.io/v1/clusterroles",
				`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"atk-access"},"rules":[{"nonResourceURLs":["/"],"verbs":["access"]}]}`)
			t.Logf("clusterrole: %d %.200s", code, body)
			code, body = h.send("mallory", http.MethodPost, ws+"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
				`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"atk-access"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"atk-access"},`+
					`"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:serviceaccounts"}]}`)
			t.Logf("clusterrolebinding: %d %.200s", code, body)
			robot := token("sa-home", "robot")
			code, body = h.doURL(robot, h.base()+"/api/v1/namespaces")
			t.Logf("hub SA sa-home/robot lists namespaces: %d %.300s", code, body)
			if code == 200 && strings.Contains(body, robotNS) {
				t.Errorf("mallory's hub ServiceAccount lists the downstream robot's tenant namespace %s", robotNS)
			}
			code, body = h.doURL(robot, h.base()+"/api/v1/namespaces/"+robotNS+"/configmaps")
			notOKT(t, "mallory's hub SA reads the downstream robot's configmaps", code, body)
			gc := token("kube-system", "generic-garbage-collector")
			code, body = h.doURL(gc, h.base()+"/api/v1/namespaces/kube-system/secrets")
			t.Logf("hub SA kube-system/generic-garbage-collector reads secrets: %d %.300s", code, body)
			for _, r := range rec.requests("/api/v1/namespaces") {
				if strings.HasPrefix(r.Header.Get("Impersonate-User"), "system:serviceaccount:") {
					t.Logf("downstream saw %s as %s %v", r.Path, r.Header.Get("Impersonate-User"), r.Header.Values("Impersonate-Group"))
				}
			}
			notOKT(t, "mallory's hub SA acts as the downstream's garbage collector", code, body)
		}},
		{"tf:35", "through the hub: forged X-Kedge-User/X-Kedge-Groups from alice are replaced by the hub's identity", func(t *testing.T) {
			h := hub(t)
			for _, hdr := range []http.Header{
				{"X-Kedge-User": {"bob"}},
				{"X-Kedge-User": {"bob"}, "X-Kedge-Groups": {"system:masters"}},
				{"X-Kedge-Groups": {"system:masters"}},
				{"x-kedge-user": {"bob"}},
			} {
				code, body := h.doHeader(hubUsers["alice"], h.base()+"/api/v1/namespaces", hdr)
				if code == 200 {
					noLeak(t, fmt.Sprint(hdr), body)
				}
				code, body = h.doHeader(hubUsers["alice"], h.base()+"/api/v1/namespaces/"+solarNS+"/configmaps", hdr)
				if code == 200 {
					t.Fatalf("%v: alice read solar's configmaps through the hub: %.300s", hdr, body)
				}
			}
			for _, r := range rec.requests("/api/v1/namespaces/" + solarNS) {
				if r.Header.Get("Impersonate-User") == "bob" || strings.Contains(strings.Join(r.Header.Values("Impersonate-Group"), ","), "system:masters") {
					t.Fatalf("downstream saw a forged identity: %v", r.Header)
				}
			}
		}},
		{"tf:36", "through the hub: downstream name tricks (dot segments, encoding, case, empty, traversal into another cluster name)", func(t *testing.T) {
			h := hub(t)
			root := h.URL + "/services/providers/tenant-filter/clusters/"
			for _, u := range []string{
				root + "shared/../nope/api/v1/namespaces",
				root + "nope/../shared/api/v1/namespaces",
				root + "shared%2F..%2Fnope/api/v1/namespaces",
				root + "%73hared/api/v1/namespaces",
				root + "SHARED/api/v1/namespaces",
				root + "/api/v1/namespaces",
				root + "shared/../../clusters/shared/api/v1/namespaces",
				h.URL + "/services/providers/tenant-filter//clusters/shared/api/v1/namespaces",
			} {
				code, body := h.doURL(hubUsers["alice"], u)
				if code == 200 {
					noLeak(t, u, body)
				}
			}
		}},
		{"tf:37", "through the hub: unauthenticated and non-tenant hub users get no provider-credential view", func(t *testing.T) {
			h := hub(t)
			code, body := h.doURL("not-a-token", h.base()+"/api/v1/namespaces")
			notOKT(t, "bad hub token", code, body)
			code, body = h.doURL(hubUsers["mallory"], h.base()+"/api/v1/namespaces")
			notOKT(t, "mallory", code, body)
			code, body = h.doURL(hubUsers["mallory"], h.base()+"/api/v1/namespaces/"+solarNS+"/configmaps")
			notOKT(t, "mallory configmaps", code, body)
		}},
		{"tf:38", "through the hub: alice's hub identity with Impersonate-* and Connection games reaches solar's configmaps? no", func(t *testing.T) {
			h := hub(t)
			for _, hdr := range []http.Header{
				{"Impersonate-User": {"bob"}},
				{"impersonate-group": {"system:masters"}},
				{"Impersonate-Extra-Scopes": {"*"}, "Impersonate-User": {"system:admin"}},
				{"Connection": {"X-Kedge-User"}},
			} {
				code, body := h.doHeader(hubUsers["alice"], h.base()+"/api/v1/namespaces/"+solarNS+"/configmaps", hdr)
				notOKT(t, fmt.Sprint(hdr), code, body)
			}
		}},
		{"tf:39", "through the hub: the hub admin (system:masters of the hub) does not become the downstream's system:masters", func(t *testing.T) {
			h := hub(t)
			if h.adminToken == "" {
				t.Skip("the hub wrote no admin token")
			}
			code, body := h.doURL(h.adminToken, h.base()+"/api/v1/namespaces/kube-system/secrets")
			var groups []string
			for _, r := range rec.requests("/api/v1/namespaces/kube-system/secrets") {
				groups = append(groups, r.Header.Values("Impersonate-Group")...)
				groups = append(groups, "user="+r.Header.Get("Impersonate-User"))
			}
			t.Logf("hub admin downstream identity: %v (code %d)", groups, code)
			notOKT(t, "hub admin reads downstream kube-system secrets", code, body)
		}},
	}
}

// send is one request to the hub as a hub user (by name) or with a raw
// token, with a JSON body.
func (h *hubProc) send(user, method, u, body string) (int, string) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.CA)
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	tok := hubUsers[user]
	if tok == "" {
		tok = user
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func notOKT(t *testing.T, what string, code int, body string) {
	t.Helper()
	if code >= 200 && code < 300 {
		t.Fatalf("%s: %d (want a refusal): %.600s", what, code, body)
	}
}

func urlq(s string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", "&", "%26", "=", "%3D", "+", "%2B", ",", "%2C", "!", "%21", "(", "%28", ")", "%29", "/", "%2F", "\"", "%22", "\n", "%0A", ":", "%3A", ";", "%3B").Replace(s)
}

func proxySettingJSON(name, ns, user string, kind capsulev1beta2.ProxyServiceKind, ops ...capsulev1beta2.ProxyOperation) string {
	ps := &capsulev1beta1.ProxySetting{
		TypeMeta:   metav1.TypeMeta{APIVersion: capsulev1beta1.SchemeGroupVersion.String(), Kind: "ProxySetting"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: capsulev1beta1.ProxySettingSpec{Subjects: []capsulev1beta1.OwnerSpec{{Kind: capsulev1beta2.UserOwner, Name: user,
			ProxyOperations: []capsulev1beta2.ProxySettings{kindOps(kind, ops...)}}}},
	}
	b, _ := json.Marshal(ps)
	return string(b)
}

func tlsClient(t *testing.T, p *proxy, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA.CertPEM)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
}

func wsDialer(p *proxy, token string) *websocket.Dialer {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA.CertPEM)
	return &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		HandshakeTimeout: time.Minute,
		Subprotocols: []string{"base64url.bearer.authorization.k8s.io." +
			base64.RawURLEncoding.EncodeToString([]byte(token)), "base64.binary.k8s.io"}}
}

// rawGet sends path verbatim (no client-side cleaning) over TLS.
func rawGet(t *testing.T, p *proxy, user, path string) (int, string) {
	t.Helper()
	return rawRequest(t, p, fx.Token(t, user), "GET "+path+" HTTP/1.1")
}

// atkDo is proxy.Do, retried when the answer is cut short: under load a
// response body sometimes ends early (unexpected EOF) somewhere between
// the test's client, the filter, the recording proxy and kube-apiserver;
// that is not an isolation question, so it is logged and retried.
func atkDo(t *testing.T, tg *proxy, user, method, path, body string, header http.Header) (int, string) {
	t.Helper()
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		req, err := http.NewRequest(method, tg.URL+path, strings.NewReader(body))
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
		resp, err := tg.httpClient().Do(req)
		if err != nil {
			last = err
			t.Logf("%s %s: %v (retrying)", method, path, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			last = err
			t.Logf("%s %s: %d, body cut short: %v (retrying)", method, path, resp.StatusCode, err)
			continue
		}
		return resp.StatusCode, string(b)
	}
	t.Fatalf("%s %s: %v", method, path, last)
	return 0, ""
}

// rawDo sends one request with its path verbatim and an optional body.
func rawDo(t *testing.T, p *proxy, token, method, path, contentType, body string) (int, string) {
	t.Helper()
	extra := ""
	if body != "" {
		extra = fmt.Sprintf("\r\nContent-Type: %s\r\nContent-Length: %d", contentType, len(body))
	}
	return rawRequestBody(t, p, token, method+" "+path+" HTTP/1.1"+extra, body)
}

// rawRequest writes one HTTP/1.1 request whose first line (and any extra
// header lines) are given verbatim, and reads the answer.
func rawRequest(t *testing.T, p *proxy, token, firstLines string) (int, string) {
	t.Helper()
	return rawRequestBody(t, p, token, firstLines, "")
}

func rawRequestBody(t *testing.T, p *proxy, token, firstLines, body string) (int, string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA.CertPEM)
	host := strings.TrimPrefix(p.URL, "https://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "%s\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n%s", firstLines, host, token, body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
