package ha

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// restConfig reaches workspace ws at base (the load balancer or one hub)
// as the load user.
func (b *bed) restConfig(base, ws string) *rest.Config {
	return &rest.Config{
		Host: base + "/clusters/" + ws, BearerToken: loadToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: b.ca.certPEM},
		QPS:             -1, Timeout: 30 * time.Second,
	}
}

// configMaps returns a ConfigMap client per workspace sharing one
// connection pool: each writer has its own, so haproxy spreads their
// connections over the replicas.
func (b *bed) configMaps(t *testing.T, base string) func(ws string) corev1client.ConfigMapInterface {
	t.Helper()
	cfg := b.restConfig(base, "root")
	// A config with its own dialer gets its own transport: client-go
	// otherwise shares one per TLS config, and every writer's requests
	// would ride one HTTP/2 connection to one replica.
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	cache := map[string]corev1client.ConfigMapInterface{}
	return func(ws string) corev1client.ConfigMapInterface {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := cache[ws]; ok {
			return c
		}
		cs, err := corev1client.NewForConfigAndClient(b.restConfig(base, ws), hc)
		if err != nil {
			t.Fatal(err)
		}
		cache[ws] = cs.ConfigMaps("default")
		return cache[ws]
	}
}

// load is the running load generator.
type load struct {
	l          *ledger
	cancel     context.CancelFunc // stops everything
	stopWrites context.CancelFunc // stops the writers only
	wg         sync.WaitGroup     // the watchers
	writers    sync.WaitGroup
	watchers   []*watcher
	// slowest is the longest a write took to be acknowledged, in ns.
	slowest atomic.Int64
}

// took notes how long an acknowledged write took.
func (ld *load) took(since time.Time) {
	d := int64(time.Since(since))
	for cur := ld.slowest.Load(); d > cur && !ld.slowest.CompareAndSwap(cur, d); cur = ld.slowest.Load() {
	}
}

type loadSpec struct {
	writers    int
	workspaces []string
	watched    []string // workspaces with a resuming watch each
	mixed      bool     // updates, deletes and reads too, not only creates
	pause      time.Duration
	prefix     string // set by startLoad
}

// loads numbers the loads of a test run: object names must not repeat.
var loads atomic.Int32

func (b *bed) startLoad(t *testing.T, base string, s loadSpec) *load {
	s.prefix = fmt.Sprintf("l%d", loads.Add(1))
	ctx, cancel := context.WithCancel(t.Context())
	wctx, wcancel := context.WithCancel(ctx)
	ld := &load{l: newLedger(), cancel: cancel, stopWrites: wcancel}
	for _, ws := range s.watched {
		w := &watcher{ws: ws, cms: b.configMaps(t, base)(ws), seen: map[string]bool{}}
		ld.watchers = append(ld.watchers, w)
		ld.wg.Go(func() { w.run(ctx, ld.l) })
	}
	for i := range s.writers {
		cms := b.configMaps(t, base)
		ld.writers.Go(func() { writer(wctx, i, cms, s, ld) })
	}
	t.Cleanup(ld.stop)
	return ld
}

func (ld *load) stop() { ld.stopWriters(); ld.cancel(); ld.wg.Wait() }

// stopWriters stops the writers and waits for them, leaving the watchers
// running, so a test can wait for them to see the last acknowledged
// writes (stopping them too would leave those unseen for good).
func (ld *load) stopWriters() { ld.stopWrites(); ld.writers.Wait() }

// writer creates ConfigMaps round-robin over the workspaces; in mixed
// mode it also updates, reads and deletes its earlier ones.
func writer(ctx context.Context, id int, cms func(string) corev1client.ConfigMapInterface, s loadSpec, ld *load) {
	l := ld.l
	var mine []objKey
	for seq := 0; ctx.Err() == nil; seq++ {
		k := objKey{ws: s.workspaces[(id+seq)%len(s.workspaces)], name: fmt.Sprintf("%s-w%d-%d", s.prefix, id, seq)}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k.name}, Data: map[string]string{"seq": fmt.Sprint(seq)}}
		start := time.Now()
		got, err := cms(k.ws).Create(ctx, cm, metav1.CreateOptions{})
		switch {
		case ctx.Err() != nil:
			l.markUncertain(k) // cut by the test's own end
			return
		case err != nil:
			l.fail("create", &k, err)
		default:
			ld.took(start)
			l.ack(k, objState{rv: got.ResourceVersion}, true)
			mine = append(mine, k)
		}
		if s.mixed && len(mine) > 2 {
			// Steady state: past keepLive objects a writer deletes one for
			// each it creates, so the store (and the hubs' watch caches)
			// stop growing and memory can be judged flat. Every fourth
			// round also updates one; the delete must not be skipped
			// then, or the store grows by a quarter of the creates.
			const keepLive = 40
			if seq%4 == 1 {
				u := mine[len(mine)-2]
				cur, err := cms(u.ws).Get(ctx, u.name, metav1.GetOptions{})
				start := time.Now()
				if err == nil {
					l.ok("get")
					cur.Data["updated"] = "yes"
					start = time.Now()
					cur, err = cms(u.ws).Update(ctx, cur, metav1.UpdateOptions{})
				}
				switch {
				case ctx.Err() != nil:
					l.markUncertain(u) // cut by the test's own end: it may have been applied
				case err == nil:
					ld.took(start)
					l.ack(u, objState{rv: cur.ResourceVersion}, false)
				default:
					l.fail("update", &u, err)
				}
			}
			if len(mine) > keepLive && ctx.Err() == nil {
				d := mine[0]
				mine = mine[1:]
				start := time.Now()
				err := cms(d.ws).Delete(ctx, d.name, metav1.DeleteOptions{})
				switch {
				case ctx.Err() != nil:
					l.markUncertain(d)
				case err == nil:
					ld.took(start)
					l.ack(d, objState{deleted: true}, false)
				default:
					l.fail("delete", &d, err)
				}
			}
		}
		if s.pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(s.pause):
			}
		}
	}
}

// watcher watches one workspace's ConfigMaps and, whenever the watch
// ends, resumes from the last resourceVersion it saw, as a reflector does
// (without relisting: an expired version is an error here).
type watcher struct {
	ws  string
	cms corev1client.ConfigMapInterface

	mu      sync.Mutex // guards the fields below
	seen    map[string]bool
	rv      string
	resumes int
}

func (w *watcher) run(ctx context.Context, l *ledger) {
	for ctx.Err() == nil {
		list, err := w.cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				l.fail("watch list", nil, err)
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		w.mu.Lock()
		for _, cm := range list.Items {
			w.seen[cm.Name] = true
		}
		w.rv = list.ResourceVersion
		w.mu.Unlock()
		break
	}
	for ctx.Err() == nil {
		w.mu.Lock()
		rv := w.rv
		w.mu.Unlock()
		wi, err := w.cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				l.fail("watch", nil, err)
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		w.consume(ctx, wi, l)
		wi.Stop()
		w.mu.Lock()
		w.resumes++
		w.mu.Unlock()
	}
}

func (w *watcher) consume(ctx context.Context, wi watch.Interface, l *ledger) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			if ev.Type == watch.Error {
				l.fail("watch", nil, fmt.Errorf("watch error event: %v", ev.Object))
				return
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				w.mu.Lock()
				if ev.Type == watch.Added {
					w.seen[cm.Name] = true
				}
				w.rv = cm.ResourceVersion
				w.mu.Unlock()
			}
		}
	}
}

// missed lists the acknowledged creates in w's workspace it has not seen.
func (w *watcher) missed(l *ledger) []string {
	l.mu.Lock()
	names := append([]string(nil), l.byWS[w.ws]...)
	l.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, n := range names {
		if !w.seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// createWorkspaces makes n workspaces under root through base, a few at a
// time, and waits until each serves its default namespace.
func (b *bed) createWorkspaces(t *testing.T, base, prefix string, n int) []string {
	t.Helper()
	hc := b.httpClient()
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%s-%d", prefix, i))
	}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body := fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q}}`, name)
			if err := retryHTTP(hc, http.MethodPost, base+"/clusters/root/apis/tenancy.wharf.dev/v1alpha1/workspaces", body, http.StatusCreated); err != nil {
				errs <- fmt.Errorf("creating workspace %s: %w", name, err)
				return
			}
			if err := retryHTTP(hc, http.MethodGet, base+"/clusters/root:"+name+"/api/v1/namespaces/default", "", http.StatusOK); err != nil {
				errs <- fmt.Errorf("workspace %s default namespace: %w", name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "root:" + n
	}
	return out
}

// retryHTTP sends the request until it gets want (a minute at most).
func retryHTTP(hc *http.Client, method, url, body string, want int) error {
	deadline := time.Now().Add(time.Minute)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+loadToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("no %d: %s", want, last)
}
