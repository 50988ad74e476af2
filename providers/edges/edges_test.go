package edges

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/sdk/clusters"
)

// TestEdges shares one kube-apiserver among the provider's scenarios; each
// subtest runs its own provider with its own fake clock.
func TestEdges(t *testing.T) {
	k := startKube(t)
	t.Run("CRDValidation", func(t *testing.T) { testCRDValidation(t, k) })
	t.Run("JoinTokenLifecycle", func(t *testing.T) { testJoinTokenLifecycle(t, k) })
	t.Run("JoinTokenSingleUseUnderConcurrency", func(t *testing.T) { testJoinConcurrent(t, k) })
	t.Run("TunnelAndStatus", func(t *testing.T) { testTunnelAndStatus(t, k) })
	t.Run("CredentialRotation", func(t *testing.T) { testCredentialRotation(t, k) })
	t.Run("ReconnectRace", func(t *testing.T) { testReconnectRace(t, k) })
	t.Run("DeleteRevokes", func(t *testing.T) { testDeleteRevokes(t, k) })
	t.Run("RejoinRevokes", func(t *testing.T) { testRejoinRevokes(t, k) })
	t.Run("SilentTunnel", func(t *testing.T) { testSilentTunnel(t, k) })
	t.Run("StartupGrace", func(t *testing.T) { testStartupGrace(t, k) })
	t.Run("Heartbeat", func(t *testing.T) { testHeartbeat(t, k) })
	t.Run("ServerHostKey", func(t *testing.T) { testServerHostKey(t, k) })
}

func testCRDValidation(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	ctx := context.Background()
	mk := func(name string, spec map[string]any) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.Kind,
			// The hub sets this on every object; without it the
			// cluster-keyed informer could not store the object.
			"metadata": map[string]any{"name": name, "annotations": map[string]any{clusters.Annotation: testCluster}}, "spec": spec,
		}}
		_, err := e.res.Create(ctx, u, metav1.CreateOptions{})
		return err
	}
	for _, c := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"v-notype", map[string]any{}, "spec.type: Required value"},
		{"v-badtype", map[string]any{"type": "vm"}, `Unsupported value: "vm"`},
		{"v-k8s-server", map[string]any{"type": "kubernetes", "server": map[string]any{}}, "spec.server is allowed only for edges of type server"},
		{"v-port", map[string]any{"type": "server", "server": map[string]any{"sshPort": 70000}}, "should be less than or equal to 65535"},
		{"v-port0", map[string]any{"type": "server", "server": map[string]any{"sshPort": 0}}, "should be greater than or equal to 1"},
	} {
		err := mk(c.name, c.spec)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a 422 containing %q", c.name, err, c.want)
		}
	}
	if err := mk("v-server", map[string]any{"type": "server", "server": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	got := e.get("v-server")
	if got.Spec.Server == nil || got.Spec.Server.SSHPort != 22 {
		t.Errorf("sshPort default: %+v", got.Spec.Server)
	}
	// A merge patch carries no resourceVersion, so the status controller
	// writing the same object cannot make this a conflict.
	patch := []byte(`{"spec":{"type":"kubernetes","server":null}}`)
	if _, err := e.res.Patch(ctx, "v-server", types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.type is immutable") {
		t.Errorf("changing spec.type: %v", err)
	}
	// Printer columns, as kubectl get shows them.
	raw, err := e.kubeREST(t).Get().AbsPath("/apis/edges.wharf.dev/v1alpha1/edges").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got := strings.Join(cols, ","); got != "Name,Type,Phase,Connected,Agent,Age" {
		t.Errorf("columns %s", got)
	}
}

func testJoinTokenLifecycle(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{JoinTokenTTL: metav1.Duration{Duration: 10 * time.Minute}})
	name := e.createEdge(v1alpha1.TypeKubernetes)

	tok := e.mintToken(name)
	if exp, err := time.Parse(time.RFC3339, tok.ExpiresAt); err != nil || exp.Sub(e.clock.Now()) > 10*time.Minute || exp.Sub(e.clock.Now()) < 9*time.Minute {
		t.Errorf("expiresAt %q (%v)", tok.ExpiresAt, err)
	}
	// Only the hash is stored, nowhere the token itself.
	u, _ := e.res.Get(context.Background(), name, metav1.GetOptions{})
	js, _ := json.Marshal(u.Object)
	if strings.Contains(string(js), tok.Token) {
		t.Fatal("the join token is stored in the Edge")
	}
	if u.GetAnnotations()[AnnJoinTokenHash] != hashSecret(tok.Token) {
		t.Fatal("the token's hash is not on the Edge")
	}

	refusal := func(code int, body []byte) string {
		t.Helper()
		if code != http.StatusUnauthorized {
			t.Fatalf("want 401, got %d %s", code, body)
		}
		return string(body)
	}
	wrong := refusal(e.join(name, "not-the-token"))
	missing := refusal(e.join("no-such-edge", tok.Token))
	if wrong != missing {
		t.Errorf("a wrong token and a missing edge answer differently:\n%s\n%s", wrong, missing)
	}
	// A new token replaces the old one.
	tok2 := e.mintToken(name)
	refusal(e.join(name, tok.Token))
	if code, body := e.join(name, tok2.Token); code != http.StatusOK {
		t.Fatalf("join: %d %s", code, body)
	}
	// Single use.
	if got := refusal(e.join(name, tok2.Token)); got != wrong {
		t.Errorf("a spent token answers differently: %s", got)
	}
	// Expiry, on the injected clock.
	tok3 := e.mintToken(name)
	e.clock.Step(10*time.Minute + time.Second)
	if got := refusal(e.join(name, tok3.Token)); got != wrong {
		t.Errorf("an expired token answers differently: %s", got)
	}
	tok4 := e.mintToken(name)
	e.clock.Step(9 * time.Minute)
	if code, body := e.join(name, tok4.Token); code != http.StatusOK {
		t.Fatalf("join before expiry: %d %s", code, body)
	}
	if a := e.get(name).Annotations; a[AnnJoinTokenHash] != "" || a[AnnCredentialHash] == "" {
		t.Errorf("after a join: %v", a)
	}
	// Missing edge for join-token: a 404 (the caller is authorized).
	if code, _ := e.post(protocol.EgressBase(testCluster, "no-such-edge")+"/join-token", nil); code != http.StatusNotFound {
		t.Errorf("join-token of a missing edge: %d", code)
	}
}

func testJoinConcurrent(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	tok := e.mintToken(name).Token
	const n = 8
	var wg sync.WaitGroup
	codes := make([]int, n)
	creds := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := e.join(name, tok)
			codes[i] = code
			var r protocol.JoinResponse
			_ = json.Unmarshal(body, &r)
			creds[i] = r.Credential
		}()
	}
	wg.Wait()
	wins := 0
	var cred string
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			wins++
			cred = creds[i]
		case http.StatusUnauthorized:
		default:
			t.Errorf("join %d: %d", i, c)
		}
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent exchanges of one token won; want exactly 1 (%v)", wins, n, codes)
	}
	if e.get(name).Annotations[AnnCredentialHash] != hashSecret(cred) {
		t.Error("the stored credential is not the winner's")
	}
}

func testTunnelAndStatus(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	eventually(t, "Pending status", func() bool { return e.get(name).Status.Phase == v1alpha1.PhasePending })
	st := e.get(name).Status
	wantURL := "https://hub.example" + protocol.BackendPrefix + protocol.EgressBase(testCluster, name) + "/k8s"
	if st.URL != wantURL {
		t.Errorf("URL %q, want %q", st.URL, wantURL)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRegistered); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonAwaitingJoin {
		t.Errorf("Registered before a join: %+v", c)
	}
	if _, err := e.p.DialEdge(context.Background(), testCluster, name); err == nil || !errorsIs(err, ErrNotConnected) {
		t.Errorf("DialEdge without a tunnel: %v", err)
	}

	cred := e.joinOK(name)
	if _, code := e.connect(name, "wrong", nil); code != http.StatusUnauthorized {
		t.Errorf("wrong credential: %d", code)
	}
	if _, code := e.connect("no-such-edge", cred, nil); code != http.StatusUnauthorized {
		t.Errorf("credential of another edge: %d", code)
	}
	a, code := e.connect(name, cred, http.Header{protocol.HeaderAgentVersion: {"v9"}, protocol.HeaderAgentHostname: {"box"}})
	if code != http.StatusSwitchingProtocols || a.rotated != "" {
		t.Fatalf("connect: %d rotated=%v", code, a.rotated != "")
	}
	eventually(t, "Ready", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	st = e.get(name).Status
	if st.AgentVersion != "v9" || st.Hostname != "box" || st.LastHeartbeatTime == nil || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	for typ, reason := range map[string]string{v1alpha1.ConditionRegistered: ReasonAgentJoined, v1alpha1.ConditionConnected: ReasonTunnelUp} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
			t.Errorf("%s: %+v", typ, c)
		}
	}
	// A connection through the tunnel reaches the agent (which echoes).
	echo(t, e, name, "hello through the tunnel")
	if got := gaugeValue(t, e, "wharf_edges_connected"); got != 1 {
		t.Errorf("wharf_edges_connected %v", got)
	}
	if got := counterValue(t, e, "wharf_edges_tunnel_dials_total", "result", "success"); got != 1 {
		t.Errorf("successful dials %v", got)
	}
	if got := counterValue(t, e, "wharf_edges_tunnel_bytes_total", "direction", "to_edge"); got < float64(len("hello through the tunnel")) {
		t.Errorf("bytes to edge %v", got)
	}

	// The agent goes away: Disconnected, with the reason.
	a.l.Close()
	eventually(t, "Disconnected", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseDisconnected })
	if c := meta.FindStatusCondition(e.get(name).Status.Conditions, v1alpha1.ConditionConnected); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonTunnelDown {
		t.Errorf("Connected after the tunnel died: %+v", c)
	}
	// And Ready again on reconnect, with the saved credential.
	if _, code := e.connect(name, cred, nil); code != http.StatusSwitchingProtocols {
		t.Fatalf("reconnect: %d", code)
	}
	eventually(t, "Ready again", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
}

func echo(t *testing.T, e *env, name, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := e.p.DialEdge(ctx, testCluster, name)
	if err != nil {
		t.Fatalf("DialEdge: %v", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("echo %q, %v", buf, err)
	}
}
