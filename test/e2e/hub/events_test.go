package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEvents checks what the kube side of the fidelity table cannot show
// (it runs no controllers and its etcd is not ours): every event key
// carries an etcd lease of --event-ttl on every write path, events stay in
// their workspace, and the hub's namespace controller records an event
// that kubectl events shows.
func TestEvents(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	const ttl = 7 * time.Minute
	h := startHub(t, hubOptions{etcdServers: endpoints, extraArgs: []string{"--event-ttl", ttl.String()}})
	a := h.createWorkspace("root", "ev-a")
	h.createWorkspace("root", "ev-b")

	base := "/clusters/root:ev-a/api/v1/namespaces/default/events"
	ev := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":%q},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"R","message":"m","type":"Normal"}`, name)
	}
	// leaseOf returns the TTL the event's key was granted, failing when it
	// has no lease.
	leaseOf := func(name string) time.Duration {
		t.Helper()
		keys := keysContaining(t, etcd, "/events/"+a+"/default/"+name)
		if len(keys) != 1 {
			t.Fatalf("etcd keys of event %s: %v", name, keys)
		}
		resp, err := etcd.Get(context.Background(), keys[0])
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading %s: %v", keys[0], err)
		}
		if resp.Kvs[0].Lease == 0 {
			t.Fatalf("event key %s has no lease", keys[0])
		}
		l, err := etcd.TimeToLive(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(l.GrantedTTL) * time.Second
	}
	// The apiserver's lease manager may hand out a lease up to a minute
	// longer, to share it among keys written close together.
	checkTTL := func(what, name string) {
		t.Helper()
		if got := leaseOf(name); got < ttl || got > ttl+2*time.Minute {
			t.Errorf("%s: lease TTL %s, want about %s", what, got, ttl)
		}
	}
	if code, body := h.doAs(h.Token, http.MethodPost, base, ev("e1")); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	checkTTL("create", "e1")
	if code, body := h.doAs(h.Token, http.MethodPut, base+"/e2", ev("e2")); code != 201 {
		t.Fatalf("create on update: %d %s", code, body)
	}
	checkTTL("create by PUT", "e2")
	if code, body := h.doAs(h.Token, http.MethodPatch, base+"/e1", `{"message":"patched"}`); code != 200 {
		t.Fatalf("patch: %d %s", code, body)
	}
	checkTTL("patch", "e1")
	h.mustApply("root:ev-a", strings.Replace(strings.Replace(ev("e3"), `"m"`, `"applied"`, 1), `{"name":"e3"}`, `{"name":"e3","namespace":"default"}`, 1),
		"apply", "--server-side", "--field-manager", "t")
	checkTTL("server-side apply", "e3")
	h.mustApply("root:ev-a", strings.Replace(ev("e3"), `{"name":"e3"}`, `{"name":"e3","namespace":"default"}`, 1), "apply", "--server-side", "--field-manager", "t")
	checkTTL("server-side apply update", "e3")
	if code, body := h.doAs(h.Token, http.MethodPost, "/clusters/root:ev-a/apis/events.k8s.io/v1/namespaces/default/events",
		`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e4"},"eventTime":"2026-01-02T03:04:05.000000Z","reportingController":"x.io/t","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"kind":"ConfigMap","namespace":"default","name":"x"}}`); code != 201 {
		t.Fatalf("events.k8s.io create: %d %s", code, body)
	}
	checkTTL("events.k8s.io create", "e4")

	// Workspace B sees none of A's events, through either API.
	for _, p := range []string{"/api/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events", "/api/v1/events"} {
		if out := h.mustKubectl("root:ev-b", "get", "--raw", p); strings.Contains(out, `"e1"`) || strings.Contains(out, `"e4"`) {
			t.Errorf("workspace B lists A's events at %s: %s", p, out)
		}
	}
	if out, err := h.kubectl("root:ev-b", "get", "event", "e1", "-n", "default"); err == nil {
		t.Errorf("workspace B reads A's event: %s", out)
	}

	// The namespace controller reports a deletion it finished.
	h.mustKubectl("root:ev-a", "create", "namespace", "doomed")
	h.mustKubectl("root:ev-a", "delete", "namespace", "doomed", "--wait=false")
	eventually(t, 2*time.Minute, func() error {
		out, err := h.kubectl("root:ev-a", "events", "-n", "default", "--for", "namespace/doomed")
		if err != nil || !strings.Contains(out, "NamespaceContentDeleted") || !strings.Contains(out, "Namespace/doomed") {
			return fmt.Errorf("kubectl events: %v %s", err, out)
		}
		return nil
	})
	out := h.mustKubectl("root:ev-a", "get", "events", "-n", "default", "--field-selector", "involvedObject.name=doomed", "-o", "jsonpath={.items[0].source.component}")
	if out != "namespace-controller" {
		t.Errorf("event source %q", out)
	}
	if out := h.mustKubectl("root:ev-b", "get", "events", "-A"); strings.Contains(out, "doomed") {
		t.Errorf("workspace B sees A's namespace event: %s", out)
	}

	// The workspace controller reports a finished deletion in the parent,
	// where the Workspace object lived.
	h.mustKubectl("root", "delete", "workspace", "ev-b", "--wait=false")
	eventually(t, 2*time.Minute, func() error {
		out, err := h.kubectl("root", "events", "-n", "default", "--for", "workspace/ev-b")
		if err != nil || !strings.Contains(out, "WorkspaceDeleted") || !strings.Contains(out, "Deleted workspace root:ev-b") {
			return fmt.Errorf("kubectl events: %v %s", err, out)
		}
		return nil
	})
}
