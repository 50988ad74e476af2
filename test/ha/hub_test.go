package ha

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// loadToken is a hub administrator (system:masters) known to every
// replica through --token-auth-file, so a client may land on any.
const loadToken = "ha-load-token"

// checkToken is haproxy's: /readyz answers authenticated users only.
const checkToken = "ha-check-token"

// bed is everything a case runs against.
type bed struct {
	ca    *testCA
	etcd  *etcdCluster
	hubs  []*hubProc
	lb    *haproxy
	probe string // singleprobe binary
	// servingLog is where every singleprobe instance logs what it served.
	servingLog string
	sseClient  *http.Client
	// idp is the OpenID provider every replica trusts (soak logins).
	idp *bedIdP
}

// hubProc is one wharf-hub replica.
type hubProc struct {
	*proc
	Name string
	Port int
	URL  string
}

// hubSpec is how the bed starts a replica.
type hubSpec struct {
	name          string
	port          int
	externalURL   string
	etcdArgs      []string // nil: embedded etcd
	shutdownDelay time.Duration
	withProbe     bool
	extraArgs     []string // more flags, e.g. the OIDC ones
}

func (b *bed) newHub(t *testing.T, s hubSpec) *hubProc {
	t.Helper()
	cert, key := b.ca.issue(t, "hub-"+s.name)
	dir := mkdir(t, filepath.Join(t.TempDir(), s.name))
	tokens := filepath.Join(dir, "tokens.csv")
	writeFile(t, tokens, []byte(loadToken+",ha-load,ha-load-uid,\"system:masters\"\n"+checkToken+",ha-check,ha-check-uid,\"ha-checkers\"\n"))
	args := []string{
		"--data-dir", dir, "--secure-port", fmt.Sprint(s.port), "--bind-address", "127.0.0.1",
		"--external-url", s.externalURL, "--replica-name", s.name,
		"--tls-cert-file", cert, "--tls-private-key-file", key,
		"--token-auth-file", tokens,
		"--shutdown-delay", s.shutdownDelay.String(), "--shutdown-grace", "10s",
	}
	args = append(args, s.etcdArgs...)
	args = append(args, s.extraArgs...)
	if s.withProbe {
		cfg := filepath.Join(dir, "probe.yaml")
		writeFile(t, cfg, []byte("servingLog: "+b.servingLog+"\n"))
		args = append(args, "--provider", "singleprobe="+b.probe, "--provider-config", "singleprobe="+cfg)
	}
	h := &hubProc{proc: &proc{name: "wharf-hub " + s.name, bin: hubBinary(t), args: args}, Name: s.name, Port: s.port,
		URL: fmt.Sprintf("https://127.0.0.1:%d", s.port)}
	h.cleanup(t)
	return h
}

// boot starts the replica and waits for /readyz.
func (h *hubProc) boot(t *testing.T, b *bed) {
	t.Helper()
	h.start(t)
	b.waitReady(t, h, 3*time.Minute)
}

func (b *bed) httpClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: b.ca.pool()}}}
}

func (b *bed) waitReady(t *testing.T, h *hubProc, timeout time.Duration) {
	t.Helper()
	c := b.httpClient()
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequest(http.MethodGet, h.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+checkToken)
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if !h.running() {
			t.Fatalf("%s exited: %v\n%s", h.name, h.err, h.log.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s: %v", h.name, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries builds wharf-hub and the probe provider once per test run
// (from $WHARF_BIN_DIR when make build made the hub).
func binaries(t *testing.T) (hub, probe string) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := kube.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "wharf-ha-bin"); buildErr != nil {
			return
		}
		for _, b := range [][2]string{{"./cmd/wharf-hub", "wharf-hub"}, {"./test/ha/singleprobe", "wharf-provider-singleprobe"}} {
			if b[1] == "wharf-hub" && os.Getenv("WHARF_BIN_DIR") != "" {
				if _, err := os.Stat(filepath.Join(os.Getenv("WHARF_BIN_DIR"), "wharf-hub")); err == nil {
					continue
				}
			}
			cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, b[1]), b[0])
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", b[0], err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	hub = filepath.Join(buildDir, "wharf-hub")
	if d := os.Getenv("WHARF_BIN_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "wharf-hub")); err == nil {
			hub = filepath.Join(d, "wharf-hub")
		}
	}
	probe, _ = filepath.EvalSymlinks(filepath.Join(buildDir, "wharf-provider-singleprobe"))
	return hub, probe
}

func hubBinary(t *testing.T) string { h, _ := binaries(t); return h }
