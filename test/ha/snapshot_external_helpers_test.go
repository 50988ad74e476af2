package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// extHub is a wharf-hub from bin/ (make build) that clients reach with
// loadToken, serving a certificate of the bed's CA, so the hub on the
// external etcd and the hub restored onto embedded etcd are driven alike.
type extHub struct {
	*proc
	t       *testing.T
	ca      *testCA
	url     string
	dataDir string
}

// startExtHub starts a hub on dataDir with extra flags (the etcd flags
// for an external etcd; none for embedded) and waits for /readyz. The
// token file and certificates live outside dataDir: a restore target must
// be empty.
func startExtHub(t *testing.T, ca *testCA, name, dataDir string, extra ...string) *extHub {
	t.Helper()
	side := mkdir(t, filepath.Join(t.TempDir(), name+"-side"))
	tokens := filepath.Join(side, "tokens.csv")
	writeFile(t, tokens, []byte(loadToken+",ha-load,ha-load-uid,\"system:masters\"\n"))
	cert, key := ca.issue(t, "snap-"+name)
	port := freePorts(t, 1)[0]
	h := &extHub{t: t, ca: ca, url: fmt.Sprintf("https://127.0.0.1:%d", port), dataDir: dataDir}
	args := append([]string{
		"--data-dir", dataDir, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1",
		"--replica-name", name, "--tls-cert-file", cert, "--tls-private-key-file", key,
		"--token-auth-file", tokens, "--shutdown-delay", "0s", "--shutdown-grace", "5s",
	}, extra...)
	h.proc = &proc{name: "wharf-hub " + name, bin: snapBin(t, "wharf-hub"), args: args}
	h.cleanup(t)
	h.start(t)
	b := &bed{ca: ca}
	c := b.httpClient()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		req, _ := http.NewRequest(http.MethodGet, h.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+loadToken)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		if !h.running() {
			t.Fatalf("%s exited: %v\n%s", h.name, h.err, h.log.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready: %v", h.name, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// kubectl runs the real kubectl against workspace ws.
func (h *extHub) kubectl(ws, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"--server", h.url + "/clusters/" + ws, "--token", loadToken,
		"--certificate-authority", h.ca.CAFile}, args...)
	cmd := exec.CommandContext(ctx, kube.KubectlPath(h.t), full...)
	cmd.Stdin = strings.NewReader(stdin)
	// No kubeconfig of the machine's user leaks in.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(h.t.TempDir(), "none"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustKubectl retries until kubectl succeeds: a new workspace, or a CRD's
// kind, takes a moment to serve, and an etcd member may be failing over.
func (h *extHub) mustKubectl(ws, stdin string, args ...string) string {
	h.t.Helper()
	var out string
	var err error
	for range 90 {
		if out, err = h.kubectl(ws, stdin, args...); err == nil {
			return strings.TrimSpace(out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	h.t.Fatalf("kubectl %s %v: %v\n%s", ws, args, err, out)
	return ""
}

// object reads one object as JSON, without what a restore rightly changes:
// the resourceVersion (bumped so old watchers relist).
func (h *extHub) object(ws string, args ...string) map[string]any {
	h.t.Helper()
	out := h.mustKubectl(ws, "", append(append([]string{"get"}, args...), "-o", "json")...)
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		h.t.Fatalf("kubectl %s %v: %v\n%s", ws, args, err, out)
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
	}
	return obj
}

// names lists the names kubectl get prints for args, sorted.
func (h *extHub) names(ws string, args ...string) []string {
	h.t.Helper()
	out := h.mustKubectl(ws, "", append(append([]string{"get"}, args...), "-o", "name")...)
	n := strings.Fields(out)
	sort.Strings(n)
	return n
}

// sameObject fails the test unless got and want are equal.
func sameObject(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("%s after restore:\n%s\nbefore:\n%s", what, g, w)
	}
}

// snapFails runs wharf-hub with args, which must fail cleanly: exit code
// 1, no panic, a message containing every one of want, and no file (nor
// .part) left at file.
func snapFails(t *testing.T, file string, want []string, args ...string) {
	t.Helper()
	start := time.Now()
	out, err := snapRun(t, args...)
	took := time.Since(start).Round(100 * time.Millisecond)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("wharf-hub %v: %v, want exit code 1\n%s", args, err, out)
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Errorf("wharf-hub %v panicked:\n%s", args, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("wharf-hub %v: message does not name the cause (%q):\n%s", args, w, out)
		}
	}
	for _, f := range []string{file, file + ".part"} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed save left %s: %v", f, err)
		}
	}
	t.Logf("failed as expected in %s: %s", took, strings.TrimSpace(out))
}

// dirState is a directory tree's names, modes, sizes and mtimes: what a
// refused restore must leave as it was.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
