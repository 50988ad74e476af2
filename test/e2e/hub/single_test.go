package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSingleReplicaProvider runs two hub replicas on one external etcd
// with a replicas: single provider: exactly one plugin process runs, both
// replicas serve it (the other one through the forwarding hop, with the
// exact identity and none of the caller's forgeries), streams survive the
// hop, and after kill -9 of the holder the survivor takes over.
func TestSingleReplicaProvider(t *testing.T) {
	t.Parallel()
	_, endpoints := externalEtcd(t)
	bin := singleProvider(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(name string) *hubProc {
		return startHub(t, hubOptions{etcdServers: endpoints, extraArgs: []string{
			"--token-auth-file", tokens, "--provider", "single=" + bin, "--replica-name", name}})
	}
	hubs := map[string]*hubProc{"hub-a": start("hub-a"), "hub-b": start("hub-b")}
	a := hubs["hub-a"]
	wsID := a.createWorkspace("root", "single")
	a.mustKubectl("root:single", "create", "clusterrolebinding", "alice-view", "--clusterrole=view", "--user=alice")

	// Exactly one plugin process across both replicas.
	var holder, other string
	var pluginPid int
	eventually(t, 90*time.Second, func() error {
		holder, other, pluginPid = "", "", 0
		total := 0
		for name, h := range hubs {
			kids := pluginChildren(t, h.cmd.Process.Pid, bin)
			total += len(kids)
			if len(kids) == 1 {
				holder, pluginPid = name, kids[0]
			}
		}
		if total != 1 {
			return fmt.Errorf("%d plugin processes across both replicas", total)
		}
		return nil
	})
	for name := range hubs {
		if name != holder {
			other = name
		}
	}
	t.Logf("holder %s (plugin pid %d), other %s", holder, pluginPid, other)

	want := http.Header{
		"X-Kedge-User":    {"alice"},
		"X-Kedge-Groups":  {"devs", "system:authenticated"},
		"X-Kedge-Tenant":  {"root:single"},
		"X-Kedge-Cluster": {wsID},
	}
	var lastHeader http.Header
	call := func(h *hubProc, path string, hdr http.Header) (int, echoed, string) {
		req, _ := http.NewRequest(http.MethodGet, h.URL+"/services/providers/single"+path, nil)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := h.client().Do(req)
		if err != nil {
			return 0, echoed{}, err.Error()
		}
		defer resp.Body.Close()
		lastHeader = resp.Header
		body := readAll(resp)
		var e echoed
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%s: %v: %s", path, err, body)
			}
		}
		return resp.StatusCode, e, body
	}
	alice := func(extra http.Header) http.Header {
		h := http.Header{"Authorization": {"Bearer alice-token"}, "X-Wharf-Workspace": {"root:single"}}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	eventually(t, 60*time.Second, func() error {
		for _, name := range []string{holder, other} {
			if code, e, body := call(hubs[name], "/headers", alice(nil)); code != http.StatusOK || e.Pid != pluginPid {
				return fmt.Errorf("%s: %d pid %d %s", name, code, e.Pid, body)
			}
		}
		return nil
	})

	cases := []struct {
		name   string
		path   string
		header http.Header
		code   int
		want   http.Header
	}{
		{name: "plain", path: "/headers", header: alice(nil), code: 200, want: want},
		{name: "user in many cases", path: "/headers", header: alice(http.Header{
			"X-Kedge-User": {"mallory"}, "x-kedge-user": {"m2"}, "X-KEDGE-USER": {"m3"}, "x-Kedge-uSER": {"m4"}}), code: 200, want: want},
		{name: "every identity header forged", path: "/headers", header: alice(http.Header{
			"X-Kedge-Groups": {"system:masters"}, "X-Kedge-Tenant": {"root"}, "X-Kedge-Cluster": {"evil"}, "X-Kedge-Base-Path": {"/x"}}), code: 200, want: want},
		{name: "duplicates", path: "/headers", header: alice(http.Header{"X-Kedge-User": {"mallory", "alice", "root"}}), code: 200, want: want},
		{name: "connection names identity", path: "/headers", header: alice(http.Header{
			"Connection": {"X-Kedge-User, X-Kedge-Groups, X-Wharf-Replica-Assertion"}}), code: 200, want: want},
		{name: "forged assertion", path: "/headers", header: alice(http.Header{
			"X-Wharf-Replica-Assertion": {"eyJ1IjoibWFsbG9yeSJ9.AAAA"}, "X-Kedge-User": {"mallory"}}), code: 401},
		{name: "forged assertion without token", path: "/headers", header: http.Header{
			"X-Wharf-Replica-Assertion": {"eyJ1IjoibWFsbG9yeSJ9.AAAA"}}, code: 401},
		{name: "public path asserts nothing", path: "/public/headers", header: http.Header{
			"X-Kedge-User": {"mallory"}, "X-Kedge-Groups": {"system:masters"}}, code: 200, want: http.Header{}},
	}
	for _, name := range []string{other, holder} {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				code, e, body := call(hubs[name], tc.path, tc.header)
				if code != tc.code {
					t.Fatalf("status %d, want %d: %s", code, tc.code, body)
				}
				if code != 200 {
					return
				}
				if e.Pid != pluginPid {
					t.Errorf("answered by pid %d, want %d", e.Pid, pluginPid)
				}
				if got := kedgeOnly(e.Headers); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("provider saw %v, want %v", got, tc.want)
				}
				for _, h := range []string{"X-Wharf-Replica-Assertion", "X-Wharf-Replica-Hop"} {
					if v := e.Headers.Values(h); len(v) > 0 {
						t.Errorf("provider saw %s %q", h, v)
					}
				}
				if got, wantAuthz := e.Headers.Get("Authorization"), tc.header.Get("Authorization"); got != wantAuthz {
					t.Errorf("Authorization %q, want %q", got, wantAuthz)
				}
			})
		}
	}

	nh := hubs[other]
	t.Run("sse through the hop", func(t *testing.T) { sseThroughHop(t, nh, alice(nil)) })
	t.Run("websocket through the hop", func(t *testing.T) { websocketThroughHop(t, nh) })
	t.Run("ui through the hop", func(t *testing.T) {
		code, body, err := nh.getAs("", "/ui/providers/single/app.js")
		if err != nil || code != 200 || !strings.Contains(body, "x-single") {
			t.Fatalf("ui asset = %d %q %v", code, body, err)
		}
	})

	// Still one plugin process, the same one, after all that traffic.
	for name, h := range hubs {
		kids := pluginChildren(t, h.cmd.Process.Pid, bin)
		if (name == holder && (len(kids) != 1 || kids[0] != pluginPid)) || (name != holder && len(kids) != 0) {
			t.Fatalf("%s runs plugins %v; holder %s runs %d", name, kids, holder, pluginPid)
		}
	}

	// The catalog names the holder.
	hubReplica := func(h *hubProc) string {
		out, _ := h.kubectl("root", "get", "catalogentry", "single", "-o", "jsonpath={.status.hubReplica}")
		return out
	}
	eventually(t, 30*time.Second, func() error {
		if got := hubReplica(nh); got != holder {
			return fmt.Errorf("catalog hubReplica %q, want %q", got, holder)
		}
		return nil
	})

	// kill -9 the holder: the survivor takes the Lease and runs the plugin.
	killed := time.Now()
	if err := hubs[holder].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-hubs[holder].exited
	var newPid, unavailable int
	deadline := killed.Add(30 * time.Second)
	for {
		code, e, body := call(nh, "/headers", alice(nil))
		kids := pluginChildren(t, nh.cmd.Process.Pid, bin)
		if code == http.StatusOK && len(kids) == 1 && e.Pid == kids[0] {
			newPid = e.Pid
			if got := kedgeOnly(e.Headers); !reflect.DeepEqual(got, want) {
				t.Fatalf("after failover provider saw %v", got)
			}
			break
		}
		switch code {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			// No holder known, or it is not running yet: a Status with a hint.
			if lastHeader.Get("Retry-After") == "" || !strings.Contains(body, `"kind":"Status"`) {
				t.Fatalf("503 during failover without Retry-After or Status: %v %s", lastHeader, body)
			}
			unavailable++
		default:
			t.Fatalf("during failover: %d %s", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover within 30s: last %d %s, plugins %v", code, body, kids)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("failover: %s from kill -9 of %s to a request served by %s's plugin (pid %d); %d requests got 503 meanwhile",
		time.Since(killed).Round(10*time.Millisecond), holder, other, newPid, unavailable)
	eventually(t, 30*time.Second, func() error {
		if pidAlive(pluginPid) {
			return fmt.Errorf("old plugin %d still alive", pluginPid)
		}
		return nil
	})
	if got := nh.mustKubectl("root", "get", "lease", "-n", "kube-system", "provider-single", "-o", "jsonpath={.spec.holderIdentity}"); got != other {
		t.Fatalf("lease holder %q, want %q", got, other)
	}
	eventually(t, 30*time.Second, func() error {
		if got := hubReplica(nh); got != other {
			return fmt.Errorf("catalog hubReplica %q after failover, want %q", got, other)
		}
		return nil
	})

	// The killed replica comes back as a standby; a clean stop of the
	// holder hands the provider back to it.
	back := hubs[holder]
	back.start()
	eventually(t, 60*time.Second, func() error {
		if code, e, body := call(back, "/headers", alice(nil)); code != http.StatusOK || e.Pid != newPid {
			return fmt.Errorf("restarted %s: %d pid %d %s", holder, code, e.Pid, body)
		}
		return nil
	})
	if kids := pluginChildren(t, back.cmd.Process.Pid, bin); len(kids) != 0 {
		t.Fatalf("restarted standby runs plugins %v", kids)
	}
	stopped := time.Now()
	nh.stop()
	eventually(t, 30*time.Second, func() error {
		code, e, body := call(back, "/headers", alice(nil))
		kids := pluginChildren(t, back.cmd.Process.Pid, bin)
		if code != http.StatusOK || len(kids) != 1 || e.Pid != kids[0] {
			return fmt.Errorf("after clean stop of %s: %d %s, plugins %v", other, code, body, kids)
		}
		return nil
	})
	t.Logf("handover after a clean stop of %s: %s", other, time.Since(stopped).Round(10*time.Millisecond))
}
