package tenantfilter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

const proxyBinaryName = "wharf-provider-tenant-filter"

var proxyBuild struct {
	once sync.Once
	path string
	err  error
}

// proxyBinary is $WHARF_BIN_DIR/wharf-provider-tenant-filter (make test),
// else ./bin/ of the repository (make build), else a build made once per
// package run. Run make build after changing the provider, or the ./bin
// copy is stale.
func proxyBinary(t testing.TB) string {
	t.Helper()
	proxyBuild.once.Do(func() {
		var dirs []string
		if d := os.Getenv("WHARF_BIN_DIR"); d != "" {
			dirs = append(dirs, d)
		}
		root, err := kube.RepoRoot()
		if err != nil {
			proxyBuild.err = err
			return
		}
		dirs = append(dirs, filepath.Join(root, "bin"))
		for _, d := range dirs {
			p := filepath.Join(d, proxyBinaryName)
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o111 != 0 {
				proxyBuild.path = p
				return
			}
		}
		out, err := os.MkdirTemp("", "wharf-tenantfilter-bin-")
		if err != nil {
			proxyBuild.err = err
			return
		}
		p := filepath.Join(out, proxyBinaryName)
		cmd := exec.Command("go", "build", "-o", p, "./cmd/wharf-provider-tenant-filter")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			proxyBuild.err = fmt.Errorf("go build: %w\n%s", err, b)
			return
		}
		proxyBuild.path = p
	})
	if proxyBuild.err != nil {
		t.Fatal(proxyBuild.err)
	}
	return proxyBuild.path
}

// proxyOptions shape one standalone proxy process.
type proxyOptions struct {
	// TLS serves HTTPS with a certificate from a test CA (clients verify
	// it); false passes --enable-ssl=false.
	TLS bool
	// Kubeconfig is the downstream credential; empty means the fixture's
	// admin kubeconfig.
	Kubeconfig string
	// Args are appended (capsule-proxy's flags, --status-controller, ...).
	Args []string
}

// proxy is a running wharf-provider-tenant-filter standalone process.
type proxy struct {
	t          testing.TB
	URL        string // https://127.0.0.1:<port> or http://...
	MetricsURL string // http://127.0.0.1:<port>
	CA         *testCA
	cmd        *exec.Cmd
	log        *testutil.Buffer
	exited     chan struct{}
	exitErr    error
}

// startProxy starts the proxy and waits until it is ready. It is stopped
// when the test ends, and its log tail is printed if the test failed.
func startProxy(t testing.TB, o proxyOptions) *proxy {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := startProxyOnce(t, o)
		if err == nil {
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("%s log (%s):\n%s", proxyBinaryName, p.URL, testutil.Tail(p.log.String(), 80))
				}
			})
			return p
		}
		// A free port is only free until someone binds it; on a shared
		// machine that race is the harness's, so retry it.
		if attempt < 3 && strings.Contains(p.log.String(), "address already in use") {
			continue
		}
		t.Fatalf("%s not ready: %v\n%s", proxyBinaryName, err, testutil.Tail(p.log.String(), 80))
	}
}

func startProxyOnce(t testing.TB, o proxyOptions) (*proxy, error) {
	kc := o.Kubeconfig
	if kc == "" {
		kc = fx.Kubeconfig()
	}
	port, mport := freePort(t), freePort(t)
	p := &proxy{t: t, log: &testutil.Buffer{}, exited: make(chan struct{}),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", mport)}
	args := []string{"standalone", "--kubeconfig", kc, "--listening-port", fmt.Sprint(port),
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", mport)}
	if o.TLS {
		p.CA = newTestCA(t, "tenant-filter-serving")
		cert, key := p.CA.servingCert(t)
		args = append(args, "--enable-ssl=true", "--ssl-cert-path", cert, "--ssl-key-path", key)
		p.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	} else {
		args = append(args, "--enable-ssl=false")
		p.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	args = append(args, o.Args...)
	p.cmd = exec.Command(proxyBinary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return p, err
	}
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(90 * time.Second); err != nil {
		p.stop()
		return p, err
	}
	return p, nil
}

func freePort(t testing.TB) int {
	t.Helper()
	return testutil.FreePort(t)
}

// waitReady polls /readyz on the metrics address and on the listener
// (either may serve it) until one answers 200.
func (p *proxy) waitReady(timeout time.Duration) error {
	hc := p.httpClient()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("exited early: %v", p.exitErr)
		default:
		}
		for _, u := range []string{p.MetricsURL + "/readyz", p.URL + "/readyz"} {
			resp, err := hc.Get(u)
			if err != nil {
				last = err
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s: %s", u, resp.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("timeout after %s: %v", timeout, last)
}

// stop sends SIGTERM and waits (then kills) the process.
func (p *proxy) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Log is the process output so far.
func (p *proxy) Log() string { return p.log.String() }

// httpClient trusts the proxy's serving CA (if TLS) and sends no credential.
func (p *proxy) httpClient() *http.Client {
	tr := &http.Transport{}
	if p.CA != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(p.CA.CertPEM)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// Config is a rest config reaching the proxy as a test user, with the
// user's static bearer token.
func (p *proxy) Config(t testing.TB, user string) *rest.Config {
	t.Helper()
	cfg := &rest.Config{Host: p.URL, BearerToken: fx.Token(t, user), QPS: -1, Timeout: time.Minute}
	if p.CA != nil {
		cfg.TLSClientConfig.CAData = p.CA.CertPEM
	}
	return cfg
}

// Clientset and Dynamic are clients through the proxy as user.
func (p *proxy) Clientset(t testing.TB, user string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(p.Config(t, user))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (p *proxy) Dynamic(t testing.TB, user string) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(p.Config(t, user))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Kubeconfig writes a kubeconfig for user through the proxy.
func (p *proxy) Kubeconfig(t testing.TB, user string) string {
	t.Helper()
	return fx.WriteKubeconfig(t, uniq("proxy-"+strings.ReplaceAll(user, ":", "_")), p.Config(t, user))
}

// Kubectl runs the real kubectl as user through the proxy and returns
// stdout; err carries stderr.
func (p *proxy) Kubectl(t testing.TB, user string, args ...string) (string, error) {
	t.Helper()
	if p.CA == nil {
		// clientcmd applies a kubeconfig's credentials only to TLS
		// servers, so kubectl would reach a plain-HTTP proxy anonymously.
		t.Fatal("kubectl sends credentials only over TLS: start this proxy with proxyOptions{TLS: true}")
	}
	return runKubectl(t, p.Kubeconfig(t, user), args...)
}

func runKubectl(t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// -v=6 logs every request kubectl makes with its status and latency;
	// those lines are kept out of the error the tests match and logged
	// only if kubectl is stopped. It is stopped with SIGQUIT, so its
	// goroutines end up in the error: a hang says which request, or which
	// wait, it was.
	full := append([]string{"--kubeconfig", kubeconfig, "-v=6"}, args...)
	cmd := exec.CommandContext(ctx, kube.KubectlPath(t), full...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg, trace := splitKubectlLog(stderr.String())
		if ctx.Err() != nil {
			t.Logf("kubectl %s stopped after %s; its request log:\n%s", strings.Join(args, " "), 2*time.Minute, trace)
		}
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// kubectlTrace matches the klog info lines -v=6 adds (request log,
// kubeconfig loading); warnings and errors stay in the message.
var kubectlTrace = regexp.MustCompile(`^I\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^ ]+:\d+\] `)

// splitKubectlLog separates kubectl's stderr into what the tests match
// (its messages) and its -v=6 trace.
func splitKubectlLog(stderr string) (msg, trace string) {
	var m, tr strings.Builder
	for line := range strings.Lines(stderr) {
		if kubectlTrace.MatchString(line) {
			tr.WriteString(line)
		} else {
			m.WriteString(line)
		}
	}
	return m.String(), tr.String()
}

// Do sends one raw request to the proxy as user (empty user: no
// credential) and returns the status code and body.
func (p *proxy) Do(t testing.TB, user, method, path string, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+fx.Token(t, user))
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.httpClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}
