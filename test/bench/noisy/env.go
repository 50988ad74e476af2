package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// defaultEtcdQuota is etcd's own default backend quota, what the embedded
// etcd of a hub without --etcd-quota-backend-bytes runs with.
const defaultEtcdQuota = 2 << 30

// quotaFlag is the hub's flag for the embedded etcd's backend quota.
const quotaFlag = "--etcd-quota-backend-bytes"

// quotaArg finds quotaFlag=<bytes> (or quotaFlag <bytes>) in args, as
// given through -hub-args.
func quotaArg(args []string) (int64, bool) {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, quotaFlag+"=")
		if !ok && a == quotaFlag && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// person is a static-token user with a home workspace.
type person struct {
	name, token string
	home        string // workspace path, root:users:<label>
	cfg         *rest.Config
	cs          kubernetes.Interface
	dyn         dynamic.Interface
	http        *http.Client // HTTP/2: many requests share a connection
	http1       *http.Client // HTTP/1.1: one connection per request in flight
}

// env is one running hub with its tenants and monitors.
type env struct {
	p        params
	h        *benchkit.Hub
	quota    int64
	quotaSrc string // where the quota comes from, for the report
	ext      *extEtcd
	victim   *person
	attacker *person
	tenants  []*person
	admin    kubernetes.Interface
	adminDyn dynamic.Interface
	leases   *leaseWatch
	store    *storeWatch
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// knowsFlag reports whether bin's --help mentions flag.
func knowsFlag(ctx context.Context, bin, flag string) bool {
	out, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	return strings.Contains(string(out), flag)
}

// startEnv starts bin with the tenants' tokens, the edges provider and the
// store quota if the binary knows the flag, and makes every person's home.
func startEnv(ctx context.Context, p params, bin string) (*env, error) {
	e := &env{p: p, quota: defaultEtcdQuota}
	names := []string{"victim", "attacker"}
	for i := range p.tenants {
		names = append(names, fmt.Sprintf("tenant-%d", i))
	}
	var tokens strings.Builder
	people := make([]*person, len(names))
	for i, n := range names {
		people[i] = &person{name: n, token: token()}
		fmt.Fprintf(&tokens, "%s,%s,%s-uid,\"bench\"\n", people[i].token, n, n)
	}
	args := strings.Fields(p.hubArgs)
	e.quotaSrc = "etcd default; the binary has no " + quotaFlag
	if q, ok := quotaArg(args); ok {
		e.quota, e.quotaSrc = q, quotaFlag+" from -hub-args"
	} else if knowsFlag(ctx, bin, quotaFlag) {
		args = append(args, fmt.Sprintf("%s=%d", quotaFlag, p.etcdQuota))
		e.quota, e.quotaSrc = p.etcdQuota, quotaFlag
	}
	storeEP := ""
	if p.externalEtcd {
		x, err := startExtEtcd(ctx, p.etcdQuota)
		if err != nil {
			return nil, err
		}
		e.ext, storeEP = x, x.endpoint
		args = append(args, "--etcd-servers="+x.endpoint)
		if e.quota != p.etcdQuota {
			e.quota, e.quotaSrc = p.etcdQuota, "external etcd's --quota-backend-bytes"
		} else {
			e.quotaSrc = "external etcd's --quota-backend-bytes and " + e.quotaSrc
		}
	}
	if p.edgesBin != "" {
		edges, err := absPath(p.edgesBin)
		if err != nil {
			return nil, fmt.Errorf("edges provider: %w", err)
		}
		args = append(args, "--provider", "edges="+edges)
	}
	h, err := benchkit.StartHub(ctx, benchkit.Options{Bin: bin, DirPrefix: "wharf-noisy-", TokenFile: tokens.String(), QPS: -1, Args: args})
	if err != nil {
		if e.ext != nil {
			e.ext.stop()
		}
		return nil, err
	}
	e.h = h
	if storeEP == "" {
		storeEP = (&url.URL{Scheme: "unix", Path: filepath.Join(h.DataDir(), "etcd", "etcd.sock")}).String()
	}
	if err := e.setup(ctx, people, storeEP); err != nil {
		e.stop()
		return nil, h.Annotate(err)
	}
	return e, nil
}

func (e *env) setup(ctx context.Context, people []*person, storeEP string) error {
	var err error
	if e.admin, err = kubernetes.NewForConfig(e.h.Config("root")); err != nil {
		return fmt.Errorf("admin clientset: %w", err)
	}
	if e.adminDyn, err = dynamic.NewForConfig(e.h.Config("root")); err != nil {
		return fmt.Errorf("admin dynamic client: %w", err)
	}
	for _, pp := range people {
		if err := e.makePerson(ctx, pp); err != nil {
			return err
		}
	}
	e.victim, e.attacker, e.tenants = people[0], people[1], people[2:]
	// B6's target: a workspace the attacker may not see.
	if _, err := benchkit.CreateWorkspace(ctx, e.adminDyn, "hidden"); err != nil {
		return err
	}
	if err := benchkit.WaitDefaultNamespace(ctx, mustCS(e.h.Config("root:hidden")), "root:hidden"); err != nil {
		return err
	}
	if e.store, err = startStoreWatch(ctx, storeEP, e.quota); err != nil {
		return err
	}
	if e.p.edgesBin != "" {
		e.leases = startLeaseWatch(ctx, e.admin, e.h)
	}
	return nil
}

func mustCS(cfg *rest.Config) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err) // only on a malformed config, which Config never returns
	}
	return cs
}

// makePerson authenticates pp once (which makes its home), reads the home
// from /api/whoami and builds its clients.
func (e *env) makePerson(ctx context.Context, pp *person) error {
	base := e.h.ConfigWithToken("", pp.token)
	base.QPS, base.Burst = -1, 0
	hc, err := rest.HTTPClientFor(base)
	if err != nil {
		return fmt.Errorf("http client: %w", err)
	}
	var who struct {
		Home *struct{ Path string } `json:"home"`
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, body, err := get(ctx, hc, e.h.URL()+"/api/whoami")
		if err == nil && code == http.StatusOK {
			if err := json.Unmarshal(body, &who); err != nil {
				return fmt.Errorf("whoami %s: %w", pp.name, err)
			}
			if who.Home != nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("whoami %s: %d %v %s", pp.name, code, err, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	one := rest.CopyConfig(base)
	one.TLSClientConfig.NextProtos = []string{"http/1.1"}
	if pp.http1, err = rest.HTTPClientFor(one); err != nil {
		return fmt.Errorf("http/1.1 client: %w", err)
	}
	pp.home, pp.http = who.Home.Path, hc
	pp.cfg = e.h.ConfigWithToken(pp.home, pp.token)
	pp.cfg.QPS, pp.cfg.Burst = -1, 0
	pp.cfg.Timeout = 30 * time.Second
	if pp.cs, err = kubernetes.NewForConfig(pp.cfg); err != nil {
		return fmt.Errorf("clientset %s: %w", pp.name, err)
	}
	if pp.dyn, err = dynamic.NewForConfig(pp.cfg); err != nil {
		return fmt.Errorf("dynamic client %s: %w", pp.name, err)
	}
	return benchkit.WaitDefaultNamespace(ctx, pp.cs, pp.home)
}

// get sends one GET with c and returns code and (at most 1 MB of) body.
func get(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

func (e *env) stop() {
	if e.store != nil {
		e.store.close()
	}
	if e.leases != nil {
		e.leases.cancel()
	}
	e.h.Stop()
	if e.ext != nil {
		e.ext.stop()
	}
}

func absPath(p string) (string, error) {
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	if strings.HasPrefix(p, "/") {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + "/" + p, nil
}
