package ha

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// buildFaultProbe builds test/ha/faultprobe once and copies it under each
// provider name (its name is its binary's).
func buildFaultProbe(t *testing.T, names ...string) map[string]string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "faultprobe")
	cmd := exec.Command("go", "build", "-o", bin, "./test/ha/faultprobe")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building faultprobe: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		p := filepath.Join(dir, "wharf-provider-"+n)
		if err := os.WriteFile(p, raw, 0o755); err != nil {
			t.Fatal(err)
		}
		out[n] = p
	}
	return out
}

// catalogReplica is one replica's element of a CatalogEntry's status.
type catalogReplica struct {
	State         string  `json:"state"`
	Restarts      int     `json:"restarts"`
	LastError     string  `json:"lastError"`
	NextRetryTime *string `json:"nextRetryTime"`
}

func (h *snapHub) catalogReplica(name string) (catalogReplica, bool) {
	out, err := h.kubectl("root", "", "get", "catalogentries", name, "-o", "json")
	if err != nil {
		return catalogReplica{}, false
	}
	var e struct {
		Status struct {
			Replicas []catalogReplica `json:"replicas"`
		} `json:"status"`
	}
	if json.Unmarshal([]byte(out), &e) != nil || len(e.Status.Replicas) != 1 {
		return catalogReplica{}, false
	}
	return e.Status.Replicas[0], true
}

// unavailable reports whether a response is the backend proxy's 503 for a
// provider that is not running: a Status with reason ServiceUnavailable
// and a Retry-After of whole seconds, at least one.
func unavailable(code int, hdr http.Header, body string) (int, bool) {
	if code != http.StatusServiceUnavailable {
		return 0, false
	}
	secs, err := strconv.Atoi(hdr.Get("Retry-After"))
	if err != nil || secs < 1 {
		return 0, false
	}
	var st struct {
		Kind   string `json:"kind"`
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(body), &st) != nil || st.Kind != "Status" || st.Code != 503 || st.Reason != "ServiceUnavailable" {
		return 0, false
	}
	return secs, true
}

// TestPluginFaults: plugins that hang in Start, crash in a loop, or start
// slowly cost the hub nothing. It stays up and ready; requests to each
// faulty provider get 503 with Retry-After while a healthy provider keeps
// answering; the crash loop's backoff shows in its CatalogEntry
// (state Restarting, restarts, lastError, nextRetryTime); the slow
// provider serves once started; the hung one is timed out and restarted.
func TestPluginFaults(t *testing.T) {
	// Its own hub on its own data dir: it runs beside the others.
	t.Parallel()
	bins := buildFaultProbe(t, "hang", "crash", "slow")
	cfgDir := t.TempDir()
	args := []string{"--provider", "hello=" + snapBin(t, "wharf-provider-hello"), "--provider-start-timeout", "15s"}
	for name, cfg := range map[string]string{"hang": "mode: hang\n", "crash": "mode: crash-loop\n", "slow": "mode: slow-start\ndelay: 10s\n"} {
		f := filepath.Join(cfgDir, name+".yaml")
		if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--provider", name+"="+bins[name], "--provider-config", name+"="+f)
	}
	h := snapStartHub(t, t.TempDir(), args...)
	ws := http.Header{"X-Wharf-Workspace": {"root"}}

	seen503 := map[string][]int{} // Retry-After values seen per provider
	var crashEntry, hangEntry catalogReplica
	slowServed, helloServed := false, 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if code, body := h.get("/readyz"); code != http.StatusOK {
			t.Fatalf("hub not ready while plugins misbehave: %d %s", code, body)
		}
		if code, _, body := h.do("/services/providers/hello/whoami", ws); code == http.StatusOK {
			helloServed++
		} else {
			t.Fatalf("healthy provider hello answered %d while others misbehave: %s", code, body)
		}
		for _, name := range []string{"hang", "crash", "slow"} {
			code, hdr, body := h.do("/services/providers/"+name+"/ping", ws)
			if secs, ok := unavailable(code, hdr, body); ok {
				seen503[name] = append(seen503[name], secs)
				continue
			}
			if name == "slow" && code == http.StatusOK && strings.TrimSpace(body) == "pong slow" {
				slowServed = true
				continue
			}
			t.Fatalf("%s answered %d %v: %s", name, code, hdr, body)
		}
		if r, ok := h.catalogReplica("crash"); ok && r.State == "Restarting" && r.Restarts >= 2 && r.NextRetryTime != nil && r.LastError != "" {
			crashEntry = r
		}
		if r, ok := h.catalogReplica("hang"); ok && r.Restarts >= 1 && r.LastError != "" && r.NextRetryTime != nil {
			hangEntry = r
		}
		done := crashEntry.Restarts > 0 && hangEntry.Restarts > 0 && slowServed &&
			len(seen503["hang"]) > 0 && len(seen503["crash"]) > 0 && len(seen503["slow"]) > 0
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all faults seen: crash entry %+v, hang entry %+v, slow served %v, 503s %v", crashEntry, hangEntry, slowServed, seen503)
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("hello served %d times; Retry-After seen: %v", helloServed, seen503)
	for name, r := range map[string]catalogReplica{"crash": crashEntry, "hang": hangEntry} {
		t.Logf("%s CatalogEntry: state %s, restarts %d, nextRetryTime %s, lastError %q", name, r.State, r.Restarts, *r.NextRetryTime, r.LastError)
	}
	select {
	case <-h.exited:
		t.Fatal("the hub exited")
	default:
	}
}
