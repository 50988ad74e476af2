package edges

import (
	"context"
	"net/http"
	"testing"
	"time"

	"crypto/ed25519"
	"crypto/rand"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

func testCredentialRotation(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{CredentialRotation: metav1.Duration{Duration: time.Hour}})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	old := e.joinOK(name)
	if a, code := e.connect(name, old, nil); code != http.StatusSwitchingProtocols || a.rotated != "" {
		t.Fatalf("fresh credential: %d, rotated=%v", code, a != nil && a.rotated != "")
	}
	e.clock.Step(time.Hour + time.Second)
	a, code := e.connect(name, old, nil)
	if code != http.StatusSwitchingProtocols || a.rotated == "" || a.rotated == old {
		t.Fatalf("due credential: %d, no rotation in the 101 answer", code)
	}
	fresh := a.rotated
	ann := e.get(name).Annotations
	if ann[AnnCredentialHash] != hashSecret(fresh) || ann[AnnPreviousCredentialHash] != hashSecret(old) {
		t.Fatalf("annotations after rotation: %v", ann)
	}
	// The agent missed the answer: the old credential still works, and
	// gets another new one; the one it missed is dead.
	a, code = e.connect(name, old, nil)
	if code != http.StatusSwitchingProtocols || a.rotated == "" || a.rotated == fresh {
		t.Fatalf("previous credential: %d", code)
	}
	if _, code := e.connect(name, fresh, nil); code != http.StatusUnauthorized {
		t.Errorf("a superseded, never used credential: %d", code)
	}
	fresh = a.rotated
	// First use of the new one retires the old one.
	if a, code := e.connect(name, fresh, nil); code != http.StatusSwitchingProtocols || a.rotated != "" {
		t.Fatalf("new credential: %d", code)
	}
	if _, code := e.connect(name, old, nil); code != http.StatusUnauthorized {
		t.Errorf("the old credential after the new one was used: %d", code)
	}
	if _, ok := e.get(name).Annotations[AnnPreviousCredentialHash]; ok {
		t.Error("previous credential still stored")
	}
}

// testReconnectRace: a second tunnel of the same edge replaces the first;
// the first one's death must not remove the second or mark the edge
// Disconnected (kedge's reconnect race).
func testReconnectRace(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	cred := e.joinOK(name)
	a1, _ := e.connect(name, cred, nil)
	eventually(t, "Ready", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	t1, _ := e.p.tunnels.get(tunnelID(testCluster, name))
	rv := e.get(name).ResourceVersion

	a2, code := e.connect(name, cred, nil)
	if code != http.StatusSwitchingProtocols {
		t.Fatalf("second tunnel: %d", code)
	}
	<-a1.l.Done() // revdial closed the replaced tunnel
	<-t1.d.Done()
	eventually(t, "the new tunnel registered", func() bool {
		t2, ok := e.p.tunnels.get(tunnelID(testCluster, name))
		return ok && t2.d != t1.d
	})
	// Replay the old tunnel's clean-up explicitly: still a no-op.
	e.p.tunnelDone(testCluster, name, t1.d)
	if _, ok := e.p.tunnels.get(tunnelID(testCluster, name)); !ok {
		t.Fatal("the old tunnel's clean-up removed the new one")
	}
	// Two connects racing: the replaced one's handler adopts last. It must
	// not overwrite its successor.
	e.p.adopt(e.p.ctx, testCluster, name, t1.d, agentInfo{}, t1.credHash)
	if t2, ok := e.p.tunnels.get(tunnelID(testCluster, name)); !ok || t2.d == t1.d {
		t.Fatal("a late adopt of the replaced tunnel overwrote the live one")
	}
	echo(t, e, name, "through the second tunnel")
	// Let the controller settle, then check nothing flapped.
	time.Sleep(500 * time.Millisecond)
	if ph := e.get(name).Status.Phase; ph != v1alpha1.PhaseReady {
		t.Fatalf("phase %s after a reconnect", ph)
	}
	if got := e.get(name).ResourceVersion; got != rv {
		t.Errorf("the Edge was written during a reconnect (resourceVersion %s → %s); want no flap", rv, got)
	}
	_ = a2
}

func testDeleteRevokes(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	cred := e.joinOK(name)
	a, _ := e.connect(name, cred, nil)
	eventually(t, "Ready", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	if err := e.res.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.l.Done():
	case <-time.After(time.Minute):
		t.Fatal("deleting the Edge left its tunnel open")
	}
	if _, code := e.connect(name, cred, nil); code != http.StatusUnauthorized {
		t.Errorf("credential of a deleted edge: %d", code)
	}
	if _, ok := e.p.tunnels.get(tunnelID(testCluster, name)); ok {
		t.Error("the deleted edge's tunnel is still registered")
	}
}

// testStartupGrace: a (re)started provider leaves an edge that says Ready
// alone for the grace, then marks it Disconnected unless its agent came back.
func testStartupGrace(t *testing.T, k *kubeCluster) {
	first := newEnv(t, k, Config{})
	gone := first.createEdge(v1alpha1.TypeKubernetes)
	back := first.createEdge(v1alpha1.TypeKubernetes)
	credGone, credBack := first.joinOK(gone), first.joinOK(back)
	for _, c := range []struct{ name, cred string }{{gone, credGone}, {back, credBack}} {
		first.connect(c.name, c.cred, nil)
		eventually(t, "Ready", func() bool { return first.get(c.name).Status.Phase == v1alpha1.PhaseReady })
	}
	// Failover: the old provider's process is gone without a word (no
	// status write), as after kill -9. Stop the controller first.
	first.p.cancel()
	<-first.p.done

	e := newEnv(t, k, Config{StartupGrace: metav1.Duration{Duration: 90 * time.Second}})
	if _, code := e.connect(back, credBack, nil); code != http.StatusSwitchingProtocols {
		t.Fatalf("reconnect to the new provider: %d", code)
	}
	eventually(t, "synced", e.p.synced)
	time.Sleep(300 * time.Millisecond)
	if ph := e.get(gone).Status.Phase; ph != v1alpha1.PhaseReady {
		t.Fatalf("within the grace the edge was marked %s", ph)
	}
	e.clock.Step(90 * time.Second)
	eventually(t, "Disconnected after the grace", func() bool { return e.get(gone).Status.Phase == v1alpha1.PhaseDisconnected })
	if ph := e.get(back).Status.Phase; ph != v1alpha1.PhaseReady {
		t.Errorf("the reconnected edge is %s", ph)
	}
}

// testHeartbeat: a connected edge costs a status write per heartbeat
// interval, none in between.
func testHeartbeat(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{HeartbeatInterval: metav1.Duration{Duration: 5 * time.Minute}, StartupGrace: metav1.Duration{Duration: time.Hour}})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	cred := e.joinOK(name)
	e.connect(name, cred, nil)
	eventually(t, "Ready", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	hb := e.get(name).Status.LastHeartbeatTime.Time
	rv := e.get(name).ResourceVersion
	e.clock.Step(150 * time.Second) // one heartbeat tick, not yet due
	time.Sleep(500 * time.Millisecond)
	if got := e.get(name).ResourceVersion; got != rv {
		t.Fatalf("the Edge was written before its heartbeat was due (resourceVersion %s → %s)", rv, got)
	}
	e.clock.Step(150 * time.Second)
	eventually(t, "a heartbeat", func() bool {
		st := e.get(name).Status
		return st.LastHeartbeatTime != nil && st.LastHeartbeatTime.After(hb)
	})
	if c := meta.FindStatusCondition(e.get(name).Status.Conditions, v1alpha1.ConditionConnected); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Connected after a heartbeat: %+v", c)
	}
}

func testServerHostKey(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	name := e.createEdge(v1alpha1.TypeServer)
	cred := e.joinOK(name)
	if _, code := e.connect(name, cred, http.Header{protocol.HeaderAgentSSHHostKey: {"ssh-ed25519 not-base64"}}); code != http.StatusBadRequest {
		t.Errorf("a malformed host key: %d", code)
	}
	// A kubernetes agent behind a server Edge would take the ssh egress's
	// raw bytes as HTTP, identity headers included: refused.
	if _, code := e.connect(name, cred, http.Header{protocol.HeaderAgentType: {"kubernetes"}}); code != http.StatusBadRequest {
		t.Errorf("a kubernetes agent on a server Edge: %d, want 400", code)
	}
	if _, code := e.connect(name, cred, http.Header{protocol.HeaderAgentType: {""}}); code != http.StatusBadRequest {
		t.Errorf("an agent that names no type: %d, want 400", code)
	}
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	key := string(ssh.MarshalAuthorizedKey(sp))
	if _, code := e.connect(name, cred, http.Header{protocol.HeaderAgentSSHHostKey: {key[:len(key)-1] + " comment"}}); code != http.StatusSwitchingProtocols {
		t.Fatalf("connect: %d", code)
	}
	eventually(t, "host key in status", func() bool { return e.get(name).Status.SSHHostKey == key[:len(key)-1] })
	if u := e.get(name).Status.URL; u != "https://hub.example"+protocol.BackendPrefix+protocol.EgressBase(testCluster, name)+"/ssh" {
		t.Errorf("URL %s", u)
	}
}

// testRejoinRevokes: a new join replaces the agent; the old agent's tunnel
// is closed and its credential refused, the new agent's tunnel stays.
func testRejoinRevokes(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	oldCred := e.joinOK(name)
	old, _ := e.connect(name, oldCred, nil)
	eventually(t, "Ready", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	newCred := e.joinOK(name)
	select {
	case <-old.l.Done():
	case <-time.After(time.Minute):
		t.Fatal("the replaced agent's tunnel stayed open after a new join")
	}
	if _, code := e.connect(name, oldCred, nil); code != http.StatusUnauthorized {
		t.Errorf("the replaced agent's credential: %d", code)
	}
	nw, code := e.connect(name, newCred, nil)
	if code != http.StatusSwitchingProtocols {
		t.Fatalf("new agent: %d", code)
	}
	eventually(t, "Ready with the new agent", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	echo(t, e, name, "new agent")
	select {
	case <-nw.l.Done():
		t.Fatal("the new agent's tunnel was closed")
	case <-time.After(300 * time.Millisecond):
	}
}

// testSilentTunnel: an agent that goes silent without closing anything (an
// intermediary dropped it) is Disconnected once revdial's read deadline
// passes; the test shortens the deadline the way the provider config does.
func testSilentTunnel(t *testing.T, k *kubeCluster) {
	e := newEnv(t, k, Config{KeepAliveInterval: metav1.Duration{Duration: 200 * time.Millisecond}, ReadDeadline: metav1.Duration{Duration: time.Second}})
	name := e.createEdge(v1alpha1.TypeKubernetes)
	cred := e.joinOK(name)
	ws := e.rawControl(name, cred) // never reads, never answers
	defer ws.Close()
	eventually(t, "Ready", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseReady })
	eventually(t, "Disconnected after silence", func() bool { return e.get(name).Status.Phase == v1alpha1.PhaseDisconnected })
	if c := meta.FindStatusCondition(e.get(name).Status.Conditions, v1alpha1.ConditionConnected); c == nil || c.Reason != ReasonTunnelDown {
		t.Errorf("Connected: %+v", c)
	}
}
