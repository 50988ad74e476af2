package resourceproxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ownerTokens are static tokens of people who are no hub administrators:
// each is admin of her own home workspace only.
const ownerTokens = `mallory-token,mallory,mallory-uid,"devs"
victor-token,victor,victor-uid,"devs"
`

// kAs runs kubectl against workspace ws as the holder of token.
func (h *hub) kAs(token, ws, stdin string, args ...string) (string, error) {
	server := h.url
	if ws != "" {
		server += "/clusters/" + ws
	}
	cmd := exec.Command(h.kubectl, append([]string{"--kubeconfig", h.kubecfg, "--token", token, "--server", server}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *hub) mustKAs(token, ws, stdin string, args ...string) string {
	h.t.Helper()
	var out string
	eventually(h.t, "kubectl "+strings.Join(args, " ")+" in "+ws, func() error {
		var err error
		out, err = h.kAs(token, ws, stdin, args...)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	return out
}

// as sends one request to the hub as the holder of token.
func (h *hub) as(c *http.Client, token, method, path, body string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
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

// client trusts the hub's serving certificate.
func (h *hub) client() *http.Client {
	h.t.Helper()
	pem, err := os.ReadFile(filepath.Join(filepath.Dir(h.kubecfg), "pki", "serving.crt"))
	if err != nil {
		h.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
}

// homeOf is the home workspace of token's holder (whoami).
func (h *hub) homeOf(token string) string {
	h.t.Helper()
	out := h.mustKAs(token, "", "", "get", "--raw", "/api/whoami")
	var w struct {
		Home struct{ Path string } `json:"home"`
	}
	if err := json.Unmarshal([]byte(out), &w); err != nil || w.Home.Path == "" {
		h.t.Fatalf("whoami: %v %s", err, out)
	}
	return w.Home.Path
}

// ownerProxy sets up what the README's walk-through sets up, done by an
// ordinary person in her own tree: a child workspace of her home as the
// target, a ResourceProxy in her home; the hub admin only makes the CRD
// hub-wide. It returns her home.
func (h *hub) ownerProxy(token string) string {
	h.t.Helper()
	home := h.homeOf(token)
	target := home + ":platform"
	h.mustKAs(token, home, `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"platform"}}`, "apply", "-f", "-")
	h.mustKAs(token, home, "", "wait", "--for=condition=Ready", "workspace/platform", "--timeout=60s")
	for _, ws := range []string{home, target} {
		h.mustKAs(token, ws, `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
	}
	h.mustKAs(token, target, "", "create", "clusterrole", "db-user", "--verb=*", "--resource=databases.databases.example.com")
	h.mustKAs(token, target, "", "create", "clusterrole", "ns-create", "--verb=create", "--resource=namespaces")
	h.mustKAs(token, target, "", "create", "clusterrolebinding", "db-home", "--clusterrole=db-user", "--user=wharf:workspace:"+home)
	h.mustKAs(token, target, "", "create", "clusterrolebinding", "ns-home", "--clusterrole=ns-create", "--user=wharf:workspace:"+home)
	h.mustKAs(token, home, "", "create", "clusterrole", "rp-namespaces", "--verb=get", "--resource=namespaces")
	h.mustKAs(token, home, "", "create", "clusterrolebinding", "rp-namespaces", "--clusterrole=rp-namespaces", "--user=system:wharf:provider:resource-proxy")
	h.mustKAs(token, home, strings.ReplaceAll(proxyYAML, "root:acme:platform", target), "apply", "-f", "-")
	eventually(h.t, "ResourceProxy Ready in "+home, func() error {
		out, err := h.kAs(token, home, "", "get", "resourceproxy", "databases", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || out != "True" {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	return home
}

// TestOwnerListsThroughHerProxy (sixth outside review, W10): an ordinary
// person, admin of her home and no hub administrator, makes a
// ResourceProxy in her home to a child of it and lists through it with
// kubectl, as the README's walk-through does (as the hub admin there).
// The old binaries (70b24fb, and 879c398, 109f392 before it) admitted the
// proxied list under her tenant's whole read share (its size not known
// yet), and the provider's request to the target, made as
// wharf:workspace:<her home> and so of her tenant too, waited for that
// share behind the very list it served: after the 5 s queue wait it got
// 429, which the provider passed on; kubectl retried and gave up with
// "Error from server (TooManyRequests)". Writes and named gets (one seat)
// went through.
func TestOwnerListsThroughHerProxy(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(ownerTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, "--token-auth-file", tokens)
	h.mustK("", hubCRD, "apply", "-f", "-")
	const m = "mallory-token"
	home := h.ownerProxy(m)
	target := home + ":platform"
	// The create goes through the proxy (one seat): the route is up.
	h.mustKAs(m, home, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"m-db","namespace":"default"},"spec":{"size":1}}`, "create", "-f", "-")

	// Each once, no retry but kubectl's own: these are what failed.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "databases", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}"}, "m-db"},
		{[]string{"get", "databases", "-A", "-o", "jsonpath={.items[*].metadata.name}"}, "m-db"},
		{[]string{"get", "databases", "-n", "default"}, "m-db"},
		{[]string{"get", "database", "m-db", "-n", "default", "-o", "jsonpath={.metadata.labels.proxy\\.wharf\\.dev/owner-workspace}"}, home[strings.LastIndex(home, ":")+1:]},
	} {
		out, err := h.kAs(m, home, "", c.args...)
		t.Logf("kubectl --server $H/clusters/%s %s\n%s", home, strings.Join(c.args, " "), out)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("kubectl %s in her home, through her ResourceProxy: %v %s; want %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
	// The target holds it, labelled.
	if out, err := h.kAs(m, target, "", "get", "databases", "-n", "default", "-o", "jsonpath={.items[*].metadata.name}"); err != nil || out != "m-db" {
		t.Errorf("in the target: %v %s", err, out)
	}
	// Lists by another ordinary person through his own proxy, while hers
	// are known: each tenant's first list.
	const v = "victor-token"
	vhome := h.ownerProxy(v)
	h.mustKAs(v, vhome, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"v-db","namespace":"default"},"spec":{"size":1}}`, "create", "-f", "-")
	if out, err := h.kAs(v, vhome, "", "get", "databases", "-A", "-o", "jsonpath={.items[*].metadata.name}"); err != nil || out != "v-db" {
		t.Errorf("victor's list through his proxy: %v %s", err, out)
	}
	if out, err := h.kAs(m, home, "", "get", "databases", "-A", "-o", "jsonpath={.items[*].metadata.name}"); err != nil || out != "m-db" {
		t.Errorf("her list again: %v %s", err, out)
	}
}

// TestOwnerFloodsHerProxy: the sixth review held that her flood through
// her own resource proxy did not hurt others; with her proxied lists now
// served, it must still hold. mallory lists through her proxy from 64
// workers at once (more than her 40 read seats); meanwhile victor's
// ConfigMap create, get, list and delete in his home and his lists
// through his own proxy all succeed. Her lists are answered 200 or, past
// her share and its queue, 429: her calls back run on her lists' seats,
// never beside them. On the old binaries none of her lists (nor his
// proxied ones) was served: 429 after the queue wait.
func TestOwnerFloodsHerProxy(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(ownerTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, "--token-auth-file", tokens)
	h.mustK("", hubCRD, "apply", "-f", "-")
	const m, v = "mallory-token", "victor-token"
	home, vhome := h.ownerProxy(m), h.ownerProxy(v)
	for _, c := range []struct{ token, ws, name string }{{m, home, "m-db"}, {v, vhome, "v-db"}} {
		h.mustKAs(c.token, c.ws, `{"apiVersion":"databases.example.com/v1","kind":"Database","metadata":{"name":"`+c.name+`","namespace":"default"},"spec":{"size":1}}`, "create", "-f", "-")
	}
	c := h.client()
	dbs := func(ws string) string {
		return "/clusters/" + ws + "/apis/databases.example.com/v1/namespaces/default/databases"
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	var odd []string
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body := h.as(c, m, http.MethodGet, dbs(home), "")
				mu.Lock()
				codes[code]++
				if (code != http.StatusOK || !strings.Contains(body, `"m-db"`)) && code != http.StatusTooManyRequests && len(odd) < 5 {
					odd = append(odd, fmt.Sprintf("%d %.300s", code, body))
				}
				mu.Unlock()
			}
		}()
	}
	var failed []string
	cms := "/clusters/" + vhome + "/api/v1/namespaces/default/configmaps"
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("victim-%d", i)
		for _, s := range []struct {
			method, path, body, has string
			want                    int
		}{
			{http.MethodPost, cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`, name, http.StatusCreated},
			{http.MethodGet, cms + "/" + name, "", name, http.StatusOK},
			{http.MethodGet, cms, "", name, http.StatusOK},
			{http.MethodGet, dbs(vhome), "", `"v-db"`, http.StatusOK},
			{http.MethodDelete, cms + "/" + name, "", "", http.StatusOK},
		} {
			if code, body := h.as(c, v, s.method, s.path, s.body); code != s.want || !strings.Contains(body, s.has) {
				failed = append(failed, fmt.Sprintf("%s %s: %d %.300s", s.method, s.path, code, body))
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("mallory's proxied lists during victor's 150 operations: %v", codes)
	for _, f := range failed {
		t.Errorf("victor: %s", f)
	}
	for _, o := range odd {
		t.Errorf("mallory's proxied list answered neither her list nor 429: %s", o)
	}
	if codes[http.StatusOK] == 0 {
		t.Errorf("none of mallory's proxied lists was served: %v", codes)
	}
}
