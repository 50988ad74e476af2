package hub

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// The fidelity table (issue 12) runs the same request against a Wharf
// workspace and against the fixture's real kube-apiserver, and compares
// what a client can tell: status code, Status reason and message, Table
// columns, kubectl output. Each item registers its checks from init() in
// its own fidelity_<item>_test.go with registerFidelity; TestFidelity
// starts one hub and one kube-apiserver for all of them and runs the
// checks in order of name.

// fidelityCheck is one comparison: fn gets both sides ready.
type fidelityCheck struct {
	name string
	fn   func(t *testing.T, f *fidelity)
}

var fidelityChecks []fidelityCheck

// registerFidelity adds checks; call it from init().
func registerFidelity(name string, fn func(t *testing.T, f *fidelity)) {
	fidelityChecks = append(fidelityChecks, fidelityCheck{name: name, fn: fn})
}

// fidelityTokens: alice is a plain person on both sides (no groups beyond
// system:authenticated), so a check can grant her exactly what it needs.
const fidelityTokens = "alice-token,alice,alice-uid\n"

// fidelity is the pair under test. On the hub side every check works in
// workspace WS (root:fid) as the admin; on the kube side as the fixture's
// admin. Cluster-scoped names are shared by all checks on the kube side:
// use f.unique.
type fidelity struct {
	Hub  *hubProc
	Kube *kube.Cluster
	WS   string // hub workspace path, root:fid
	// HubAlice and KubeAlice are alice's bearer tokens on each side.
	HubAlice, KubeAlice string

	kubeHTTP  *http.Client
	kubeAdmin string
	kubecfg   string // admin kubeconfig of the kube side
	aliceKube string // alice's kubeconfig of the kube side
	aliceHub  string // alice's kubeconfig of the hub side
	seq       atomic.Int64
}

func TestFidelity(t *testing.T) {
	t.Parallel()
	f := startFidelity(t)
	sort.SliceStable(fidelityChecks, func(i, j int) bool { return fidelityChecks[i].name < fidelityChecks[j].name })
	for _, c := range fidelityChecks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, f) })
	}
	t.Logf("fidelity table: %d checks", len(fidelityChecks))
}

func startFidelity(t *testing.T) *fidelity {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(fidelityTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	_, endpoints := externalEtcd(t)
	h := startHub(t, hubOptions{etcdServers: endpoints, extraArgs: []string{
		"--token-auth-file", tokens, "--provider", "example=" + exampleProvider(t),
	}})
	k := kube.Start(t, kube.Options{Users: []kube.User{{Name: "alice"}}})
	f := &fidelity{Hub: h, Kube: k, WS: "root:fid", HubAlice: "alice-token", KubeAlice: k.Token(t, "alice"),
		kubeAdmin: k.Token(t, kube.AdminUser), kubecfg: k.Kubeconfig()}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(k.Config().CAData)
	f.kubeHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	f.aliceKube = k.WriteKubeconfig(t, "alice", k.UserConfig(t, "alice"))
	f.aliceHub = filepath.Join(t.TempDir(), "alice-hub.kubeconfig")
	kc := strings.Replace(readFile(t, h.Kubecfg), h.Token, f.HubAlice, 1)
	if err := os.WriteFile(f.aliceHub, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	h.createWorkspace("root", "fid")
	return f
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unique returns prefix plus a number no other check gets, for names that
// are cluster-scoped on the kube side (namespaces, clusterroles, CRDs).
func (f *fidelity) unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, f.seq.Add(1))
}

// fidReq is one request: Path is relative to the API root ("/api/v1/...").
// As "" is the admin, "alice" is alice. Ctype defaults to JSON (merge patch
// for PATCH); Accept to JSON.
type fidReq struct {
	Method, Path, Body, Ctype, Accept, As string
}

// fidAnswer is what came back, with the Status fields decoded when the body
// is a Status and the Table column names when it is a Table.
type fidAnswer struct {
	Code    int
	Body    string
	Reason  string
	Message string
	Columns []string
}

func (a fidAnswer) String() string {
	if a.Reason != "" || a.Message != "" {
		return fmt.Sprintf("%d %s %q", a.Code, a.Reason, a.Message)
	}
	return fmt.Sprintf("%d %s", a.Code, truncate(a.Body, 300))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// OnHub sends r to the fidelity workspace.
func (f *fidelity) OnHub(t *testing.T, r fidReq) fidAnswer {
	t.Helper()
	tok := f.Hub.Token
	if r.As == "alice" {
		tok = f.HubAlice
	}
	return f.send(t, f.Hub.client(), f.Hub.URL+"/clusters/"+f.WS, tok, r)
}

// OnKube sends r to the real kube-apiserver.
func (f *fidelity) OnKube(t *testing.T, r fidReq) fidAnswer {
	t.Helper()
	tok := f.kubeAdmin
	if r.As == "alice" {
		tok = f.KubeAlice
	}
	return f.send(t, f.kubeHTTP, "https://"+f.Kube.ReplicaHost(0), tok, r)
}

// Both sends r to each side.
func (f *fidelity) Both(t *testing.T, r fidReq) (hub, kube fidAnswer) {
	t.Helper()
	return f.OnHub(t, r), f.OnKube(t, r)
}

// Same sends r to both sides and fails unless code, reason, message and
// Table columns agree. It returns both answers for further checks.
func (f *fidelity) Same(t *testing.T, r fidReq) (hub, kube fidAnswer) {
	t.Helper()
	hub, kube = f.Both(t, r)
	if hub.Code != kube.Code || hub.Reason != kube.Reason || hub.Message != kube.Message ||
		strings.Join(hub.Columns, ",") != strings.Join(kube.Columns, ",") {
		t.Errorf("%s %s:\n  hub:  %s columns=%v\n  kube: %s columns=%v", r.Method, r.Path, hub, hub.Columns, kube, kube.Columns)
	}
	return hub, kube
}

func (f *fidelity) send(t *testing.T, c *http.Client, base, token string, r fidReq) fidAnswer {
	t.Helper()
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	hr, err := http.NewRequest(method, base+r.Path, strings.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	ctype := r.Ctype
	if ctype == "" && method == http.MethodPatch {
		ctype = "application/merge-patch+json"
	} else if ctype == "" && r.Body != "" {
		ctype = "application/json"
	}
	if ctype != "" {
		hr.Header.Set("Content-Type", ctype)
	}
	accept := r.Accept
	if accept == "" {
		accept = "application/json"
	}
	hr.Header.Set("Accept", accept)
	resp, err := c.Do(hr)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, base, r.Path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	a := fidAnswer{Code: resp.StatusCode, Body: b.String()}
	var probe struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Columns []struct {
			Name string `json:"name"`
		} `json:"columnDefinitions"`
	}
	if json.Unmarshal(b.Bytes(), &probe) == nil {
		switch probe.Kind {
		case "Status":
			a.Reason, a.Message = probe.Reason, probe.Message
		case "Table":
			for _, c := range probe.Columns {
				a.Columns = append(a.Columns, c.Name)
			}
		}
	}
	return a
}

// HubKubectl runs kubectl against the fidelity workspace as the admin, or
// as alice when as is "alice".
func (f *fidelity) HubKubectl(as string, args ...string) (string, error) {
	cfg := f.Hub.Kubecfg
	if as == "alice" {
		cfg = f.aliceHub
	}
	full := append([]string{"--kubeconfig", cfg, "--server", f.Hub.URL + "/clusters/" + f.WS}, args...)
	return f.runKubectl(filepath.Join(f.Hub.opts.dataDir, "kubecache-"+as), full)
}

// KubeKubectl runs the same kubectl against the real kube-apiserver.
func (f *fidelity) KubeKubectl(as string, args ...string) (string, error) {
	cfg := f.kubecfg
	if as == "alice" {
		cfg = f.aliceKube
	}
	return f.runKubectl(filepath.Join(f.Kube.LogDir(), "kubecache-"+as), append([]string{"--kubeconfig", cfg}, args...))
}

// BothKubectl runs kubectl on each side with the same arguments.
func (f *fidelity) BothKubectl(as string, args ...string) (hub, kube string, hubErr, kubeErr error) {
	hub, hubErr = f.HubKubectl(as, args...)
	kube, kubeErr = f.KubeKubectl(as, args...)
	return
}

// SameKubectl fails unless kubectl prints the same on both sides, after
// norm (which may be nil) has been applied to each output, and both exit
// alike.
func (f *fidelity) SameKubectl(t *testing.T, norm func(string) string, as string, args ...string) (hub, kube string) {
	t.Helper()
	hub, kube, he, ke := f.BothKubectl(as, args...)
	if norm != nil {
		hub, kube = norm(hub), norm(kube)
	}
	if hub != kube || (he == nil) != (ke == nil) {
		t.Errorf("kubectl %s:\n  hub (err=%v):\n%s\n  kube (err=%v):\n%s", strings.Join(args, " "), he, hub, ke, kube)
	}
	return hub, kube
}

func (f *fidelity) runKubectl(cache string, args []string) (string, error) {
	cmd := exec.Command(f.Hub.kubectlBin, args...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+cache)
	// A hung kubectl (a watch that never ends) fails the check, not CI.
	timer := time.AfterFunc(2*time.Minute, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// MustBoth applies a manifest on both sides (kubectl apply -f -), in the
// fidelity workspace and on the real cluster, and fails if either fails.
func (f *fidelity) MustBoth(t *testing.T, manifest string) {
	t.Helper()
	if out, err := f.applyTo(f.Hub.Kubecfg, []string{"--server", f.Hub.URL + "/clusters/" + f.WS}, manifest); err != nil {
		t.Fatalf("hub apply: %v\n%s", err, out)
	}
	if out, err := f.applyTo(f.kubecfg, nil, manifest); err != nil {
		t.Fatalf("kube apply: %v\n%s", err, out)
	}
}

func (f *fidelity) applyTo(cfg string, extra []string, manifest string) (string, error) {
	args := append([]string{"--kubeconfig", cfg}, extra...)
	args = append(args, "apply", "-f", "-")
	cmd := exec.Command(f.Hub.kubectlBin, args...)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// AgeColumn replaces every kubectl AGE value (the last column: 3s, 5m2s,
// <unknown>, …) so outputs taken at different moments compare.
func AgeColumn(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 1 && looksLikeAge(fields[len(fields)-1]) {
			line = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(line, " "), fields[len(fields)-1]), " ") + " <age>"
		}
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return strings.Join(out, "\n")
}

func looksLikeAge(s string) bool {
	if s == "<unknown>" || s == "<invalid>" {
		return true
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789smhdy", r) {
			return false
		}
	}
	return strings.ContainsAny(s, "smhdy")
}

func init() {
	// The harness checks itself: a missing object answers alike on both
	// sides, so a broken harness fails here before any item's check.
	registerFidelity("000-harness/notfound", func(t *testing.T, f *fidelity) {
		f.Same(t, fidReq{Path: "/api/v1/namespaces/default/configmaps/nope"})
		h, _ := f.SameKubectl(t, nil, "", "get", "configmap", "nope", "-n", "default")
		if !strings.Contains(h, `configmaps "nope" not found`) {
			t.Errorf("kubectl on hub: %q", h)
		}
	})
}
