package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ServiceAccountIssuer is the --service-account-issuer of every replica.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// AdminUser is the static-token identity of Cluster.Config, in system:masters.
const AdminUser = "wharf-test-admin"

// User is a static-token identity minted at start. Tokens cannot be added
// later: kube-apiserver reads --token-auth-file once.
type User struct {
	Name   string
	Groups []string
}

// Options shape a Cluster. The zero value is one replica, no extra users.
type Options struct {
	// Replicas is the number of kube-apiservers sharing the etcd; 0 means 1.
	Replicas int
	// Users get static bearer tokens; see Cluster.UserConfig.
	Users []User
	// APIServerArgs are appended to every replica's command line, so a
	// repeated flag overrides the fixture's, e.g.
	// "--disable-admission-plugins=ServiceAccount".
	APIServerArgs []string
	// StartTimeout bounds each process's wait for readiness; 0 means 2m,
	// generous because the machine is shared with compilers.
	StartTimeout time.Duration
}

// Cluster is a running etcd and set of kube-apiservers. Its methods are safe
// for concurrent use. Start registers shutdown with t.Cleanup.
type Cluster struct {
	opts       Options
	bins       Binaries
	dir        string
	logDir     string
	pki        *pki
	tokenFile  string
	adminToken string
	userTokens map[string]string
	probe      *http.Client
	kubeconfig string

	mu       sync.Mutex // serialises lifecycle changes and endpoint writes
	etcd     *etcdServer
	replicas []*replica
}

// Start builds (if needed) and starts etcd and opts.Replicas kube-apiservers,
// waits until each is ready and the kubernetes Endpoints list them, and
// registers shutdown with t.Cleanup: apiservers first, etcd after, because
// stopping both at once hangs the apiserver's graceful shutdown. On test
// failure the process logs are printed (tail) and kept on disk.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Replicas > 200 {
		t.Fatalf("kube fixture: %d replicas; at most 200 loopback addresses are used", opts.Replicas)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	c := &Cluster{opts: opts, bins: ResolveBinaries(t), dir: t.TempDir()}
	logDir, err := os.MkdirTemp("", "wharf-kube-logs-")
	if err != nil {
		t.Fatalf("kube fixture: log dir: %v", err)
	}
	c.logDir = logDir
	// Registered after TempDir so it runs first (cleanups are LIFO):
	// processes stop before their directories go away.
	t.Cleanup(func() { c.shutdown(t) })

	if err := c.prepare(); err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := c.etcd.start(ctx); err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
	for _, r := range c.replicas {
		rctx, rcancel := context.WithTimeout(context.Background(), opts.StartTimeout)
		err := c.startReplica(rctx, r)
		rcancel()
		if err != nil {
			t.Fatalf("kube fixture: %v", err)
		}
	}
	ectx, ecancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer ecancel()
	if err := c.syncEndpoints(ectx); err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
	return c
}

// prepare generates keys, tokens, ports and the admin kubeconfig.
func (c *Cluster) prepare() error {
	ips := make([]net.IP, c.opts.Replicas)
	for i := range ips {
		ips[i] = replicaIP(i)
	}
	p, err := writePKI(c.dir, ips)
	if err != nil {
		return err
	}
	c.pki = p
	if c.probe, err = probeClient(p.caPEM); err != nil {
		return err
	}
	if err := c.writeTokens(); err != nil {
		return err
	}
	ports := newPortPicker()
	if c.etcd, err = newEtcd(c.bins.Etcd, c.dir, c.logDir, ports); err != nil {
		return err
	}
	port, err := ports.pick(ips)
	if err != nil {
		return fmt.Errorf("apiserver port: %w", err)
	}
	for i, ip := range ips {
		certDir, logPath := replicaDirs(c.dir, c.logDir, i)
		c.replicas = append(c.replicas, &replica{index: i, ip: ip, port: port, certDir: certDir, logPath: logPath})
	}
	c.kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	return writeKubeconfig(c.kubeconfig, c.Config())
}

// writeTokens mints the admin token and one per Options.Users entry into
// the CSV that --token-auth-file reads: token,user,uid,"group1,group2".
func (c *Cluster) writeTokens() error {
	users := append([]User{{Name: AdminUser, Groups: []string{"system:masters"}}}, c.opts.Users...)
	c.userTokens = make(map[string]string, len(users))
	var b strings.Builder
	for _, u := range users {
		if u.Name == "" || strings.ContainsAny(u.Name, ",\"\n") {
			return fmt.Errorf("user name %q is empty or has a comma, quote or newline", u.Name)
		}
		if _, dup := c.userTokens[u.Name]; dup {
			return fmt.Errorf("user %q listed twice", u.Name)
		}
		tok, err := randomToken()
		if err != nil {
			return err
		}
		c.userTokens[u.Name] = tok
		fmt.Fprintf(&b, "%s,%s,%s,\"%s\"\n", tok, u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	c.adminToken = c.userTokens[AdminUser]
	c.tokenFile = filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(c.tokenFile, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// shutdown stops every apiserver, waits for each to exit, then stops etcd,
// and keeps the logs if the test failed.
func (c *Cluster) shutdown(t testing.TB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, r := range c.replicas {
		if r.proc != nil {
			// 60s: graceful shutdown drains requests; past that, kill.
			if err := r.proc.stop(60 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.etcd != nil && c.etcd.proc != nil {
		if err := c.etcd.proc.stop(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, err := range errs {
		t.Errorf("kube fixture shutdown: %v", err)
	}
	if t.Failed() {
		c.dumpLogs(t)
		t.Logf("kube fixture: logs kept in %s", c.logDir)
		return
	}
	os.RemoveAll(c.logDir)
}
