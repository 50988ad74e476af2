package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// attackLabel marks everything the attacker makes, for cleanup.
const attackLabel = "bench=noisy"

var attackByName = map[string]attack{
	"B1": {name: "B1", title: "fill the store (1 MB ConfigMaps, child workspaces, 500 kB Events) until refused", run: fill, cleanup: cleanFill},
	"B2": {name: "B2/B3", title: "concurrent lists of the attacker's large ConfigMaps", prepare: prepareLists, run: listFlood, cleanup: cleanCMs},
	"B4": {name: "B4", title: "deleted child workspaces held by finalizers; victim deletes an empty workspace", prepare: holdDeletions, run: hold,
		probeName: "victim workspace delete", probe: probeWorkspaceDelete, cleanup: releaseHeld},
	"B5": {name: "B5", title: "many watches on the attacker's ConfigMaps (one written every 200 ms)", run: watchFlood, cleanup: cleanCMs},
	"B6": {name: "B6", title: "flood of requests to a workspace the attacker may not see", run: forbiddenFlood},
	"B7": {name: "B7", title: "ConfigMaps owned by missing owners; victim's garbage collection", run: orphanFlood,
		probeName: "victim GC owner→dependent gone", probe: probeGC, cleanup: cleanCMs},
}

func labels() map[string]string { return map[string]string{"bench": "noisy"} }

func payload(n int) string { return strings.Repeat("x", n) }

// countCodes tallies HTTP answers (0: transport error) for the notes.
type countCodes struct {
	mu sync.Mutex
	m  map[int]int
}

func (c *countCodes) add(code int) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[int]int{}
	}
	c.m[code]++
	c.mu.Unlock()
}

func (c *countCodes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []int
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		name := fmt.Sprint(k)
		if k == 0 {
			name = "conn-err"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, c.m[k]))
	}
	return strings.Join(parts, " ")
}

// createUntilRefused creates n objects with create on workers goroutines
// and stops at the first refusal; it returns how many were created and the
// refusal, if any.
func createUntilRefused(ctx context.Context, n, workers int, create func(ctx context.Context, i int) error) (int, error) {
	var ok atomic.Int64
	err := benchkit.Pool(ctx, n, workers, func(ctx context.Context, i int) error {
		if err := create(ctx, i); err != nil {
			return err
		}
		ok.Add(1)
		return nil
	})
	if ctx.Err() != nil {
		err = nil // out of time, not refused
	}
	return int(ok.Load()), err
}

func refusal(err error) string {
	if err == nil {
		return "not refused"
	}
	return "refused: " + trim(err)
}

// B1: fill the store.
func fill(ctx context.Context, e *env, n *note) error {
	a := e.attacker
	cms := a.cs.CoreV1().ConfigMaps("default")
	mb := payload(1_000_000)
	got, err := createUntilRefused(ctx, e.p.fillMB, 3, func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%d", i), Labels: labels()}, Data: map[string]string{"d": mb}}, metav1.CreateOptions{})
		return err
	})
	n.add("%d/%d×1MB CMs %s", got, e.p.fillMB, refusal(err))
	got, err = createUntilRefused(ctx, e.p.fillWorkspaces, 4, func(ctx context.Context, i int) error {
		_, err := benchkit.CreateWorkspace(ctx, a.dyn, fmt.Sprintf("fill-%d", i))
		return err
	})
	n.add("%d/%d workspaces %s", got, e.p.fillWorkspaces, refusal(err))
	ev := payload(500_000)
	got, err = createUntilRefused(ctx, e.p.fillEvents, 2, func(ctx context.Context, i int) error {
		_, err := a.cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("fill-%d", i), Labels: labels()},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "fill-0", APIVersion: "v1"},
			Reason:         "Fill", Message: ev, Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		return err
	})
	n.add("%d/%d×500kB Events %s", got, e.p.fillEvents, refusal(err))
	// The victim is measured on the filled store for the rest of the window.
	<-ctx.Done()
	return nil
}

func cleanFill(ctx context.Context, e *env, n *note) error {
	a := e.attacker
	if _, err := deleteLabelled(ctx, a, eventsGVR); err != nil {
		n.add("deleting events: %v", trim(err))
	}
	list, err := a.dyn.Resource(benchkit.WorkspaceGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing workspaces: %w", err)
	}
	for _, w := range list.Items {
		if strings.HasPrefix(w.GetName(), "fill-") {
			_ = a.dyn.Resource(benchkit.WorkspaceGVR).Delete(ctx, w.GetName(), metav1.DeleteOptions{})
		}
	}
	return cleanCMs(ctx, e, n)
}

// cleanCMs deletes the attacker's labelled ConfigMaps in its home, one by
// one: a deletecollection of hundreds of large objects outlasts a client
// timeout on a loaded hub.
func cleanCMs(ctx context.Context, e *env, n *note) error {
	left, err := deleteLabelled(ctx, e.attacker, configMapsGVR)
	n.add("%d attacker CMs left before cleanup", left)
	return err
}

var (
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
	eventsGVR     = corev1.SchemeGroupVersion.WithResource("events")
)

// deleteLabelled deletes every object of gvr labelled attackLabel in
// namespace default of pp's home and returns how many there were.
func deleteLabelled(ctx context.Context, pp *person, gvr schema.GroupVersionResource) (int, error) {
	mc, err := metadata.NewForConfig(pp.cfg)
	if err != nil {
		return 0, err
	}
	// Metadata only: the objects may be large.
	r := mc.Resource(gvr).Namespace("default")
	l, err := r.List(ctx, metav1.ListOptions{LabelSelector: attackLabel})
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", gvr.Resource, err)
	}
	var failed atomic.Int64
	var last atomic.Value
	_ = benchkit.Pool(ctx, len(l.Items), 4, func(ctx context.Context, i int) error {
		if err := r.Delete(ctx, l.Items[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			failed.Add(1)
			last.Store(err)
		}
		return nil
	})
	if f := failed.Load(); f > 0 {
		return len(l.Items), fmt.Errorf("%d %s not deleted, last: %v", f, gvr.Resource, last.Load())
	}
	return len(l.Items), ctx.Err()
}

// settle waits until the attacker's home holds no labelled ConfigMaps and
// no child workspaces, so the next attack's baseline is not measured
// against this one's leftovers (deleted workspaces, large objects).
func settle(ctx context.Context, e *env, n *note) {
	mc, err := metadata.NewForConfig(e.attacker.cfg)
	if err != nil {
		return
	}
	t0 := time.Now()
	cms, wss := -1, -1 // -1: never listed
	var last error
	for {
		// A list cut short by the deadline keeps the previous count.
		if l, err := mc.Resource(configMapsGVR).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: attackLabel}); err == nil {
			cms = len(l.Items)
		} else if ctx.Err() == nil {
			cms, last = -1, err
		}
		if l, err := e.attacker.dyn.Resource(benchkit.WorkspaceGVR).List(ctx, metav1.ListOptions{}); err == nil {
			wss = len(l.Items)
		} else if ctx.Err() == nil {
			wss, last = -1, err
		}
		if cms == 0 && wss == 0 {
			n.add("settled in %s", time.Since(t0).Round(time.Second))
			return
		}
		if ctx.Err() != nil {
			msg := fmt.Sprintf("NOT settled after %s: %d CMs, %d workspaces left", time.Since(t0).Round(time.Second), cms, wss)
			if last != nil {
				msg += "; last list error: " + trim(last)
			}
			n.add("%s", msg)
			return
		}
		sleep(ctx, time.Second)
	}
}

// B2/B3: the attacker lists her own large ConfigMaps concurrently.
func prepareLists(ctx context.Context, e *env, n *note) error {
	cms := e.attacker.cs.CoreV1().ConfigMaps("default")
	d := payload(100_000)
	got, err := createUntilRefused(ctx, e.p.listMB*10, 4, func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Labels: labels()}, Data: map[string]string{"d": d}}, metav1.CreateOptions{})
		return err
	})
	n.add("%d×100kB CMs %s", got, refusal(err))
	return nil
}

func listFlood(ctx context.Context, e *env, n *note) error {
	url := e.h.URL() + "/clusters/" + e.attacker.home + "/api/v1/namespaces/default/configmaps"
	var codes countCodes
	var wg sync.WaitGroup
	for range e.p.lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if c := drain(ctx, e.attacker.http, url); c != -1 {
					codes.add(c)
				}
			}
		}()
	}
	wg.Wait()
	n.add("%d concurrent lists: %s", e.p.lists, codes.String())
	return nil
}

// drain GETs url and reads the whole answer; it returns the status code,
// 0 on a transport error, -1 if ctx ended.
func drain(ctx context.Context, c *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := c.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if ctx.Err() != nil {
		return -1
	}
	if err != nil {
		sleep(ctx, 100*time.Millisecond)
		return 0
	}
	return resp.StatusCode
}

// B6: requests to a workspace the attacker may not see.
func forbiddenFlood(ctx context.Context, e *env, n *note) error {
	url := e.h.URL() + "/clusters/root:hidden/api/v1/namespaces/default/configmaps"
	var codes countCodes
	var wg sync.WaitGroup
	for range e.p.forbidden {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if c := drain(ctx, e.attacker.http, url); c != -1 {
					codes.add(c)
				}
			}
		}()
	}
	wg.Wait()
	n.add("%d concurrent: %s", e.p.forbidden, codes.String())
	return nil
}

// hold attacks by state alone: it waits until the window ends.
func hold(ctx context.Context, _ *env, _ *note) error {
	<-ctx.Done()
	return nil
}
