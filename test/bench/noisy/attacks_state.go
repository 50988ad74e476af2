package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// holdFinalizer keeps a ConfigMap, and so its workspace's deletion, alive.
const holdFinalizer = "bench.wharf.dev/hold"

// B4: child workspaces, each with a finalized ConfigMap, deleted.
func holdDeletions(ctx context.Context, e *env, n *note) error {
	a := e.attacker
	got, err := createUntilRefused(ctx, e.p.heldWorkspaces, 4, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("held-%d", i)
		if _, err := benchkit.CreateWorkspace(ctx, a.dyn, name); err != nil {
			return err
		}
		cs, err := childClient(a, name)
		if err != nil {
			return err
		}
		if err := benchkit.WaitDefaultNamespace(ctx, cs, a.home+":"+name); err != nil {
			return err
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{holdFinalizer}}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("held configmap in %s: %w", name, err)
		}
		return a.dyn.Resource(benchkit.WorkspaceGVR).Delete(ctx, name, metav1.DeleteOptions{})
	})
	n.add("%d/%d held deletions %s", got, e.p.heldWorkspaces, refusal(err))
	return nil
}

func childClient(pp *person, child string) (kubernetes.Interface, error) {
	cfg := *pp.cfg
	cfg.Host = pp.cfg.Host + ":" + child
	return kubernetes.NewForConfig(&cfg)
}

// releaseHeld removes the finalizers, so the held deletions finish.
func releaseHeld(ctx context.Context, e *env, n *note) error {
	a := e.attacker
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	var failed atomic.Int64
	_ = benchkit.Pool(ctx, e.p.heldWorkspaces, 4, func(ctx context.Context, i int) error {
		cs, err := childClient(a, fmt.Sprintf("held-%d", i))
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			failed.Add(1)
		}
		return nil
	})
	if f := failed.Load(); f > 0 {
		n.add("%d finalizers not released", f)
	}
	return nil
}

var probeSeq atomic.Int64

// probeWorkspaceDelete creates an empty child of the victim's home, waits
// until it serves, deletes it and times the delete until it is gone.
func probeWorkspaceDelete(ctx context.Context, e *env) (time.Duration, error) {
	v := e.victim
	name := fmt.Sprintf("probe-%d", probeSeq.Add(1))
	if _, err := benchkit.CreateWorkspace(ctx, v.dyn, name); err != nil {
		return 0, err
	}
	cs, err := childClient(v, name)
	if err != nil {
		return 0, err
	}
	if err := benchkit.WaitDefaultNamespace(ctx, cs, v.home+":"+name); err != nil {
		return 0, err
	}
	ws := v.dyn.Resource(benchkit.WorkspaceGVR)
	t0 := time.Now()
	if err := ws.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return 0, err
	}
	for {
		_, err := ws.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return time.Since(t0), nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("workspace %s not gone after %s: %w", name, time.Since(t0).Round(time.Second), ctx.Err())
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// B5: many watches, kept busy by one write every 200 ms.
func watchFlood(ctx context.Context, e *env, n *note) error {
	a := e.attacker
	cms := a.cs.CoreV1().ConfigMaps("default")
	// Its own extra label: the watches select it alone, so each one's
	// initial list is small and the attack is the watches themselves.
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched", Labels: map[string]string{"bench": "noisy", "watched": "yes"}}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("watched configmap: %w", err)
	}
	url := e.h.URL() + "/clusters/" + a.home + "/api/v1/namespaces/default/configmaps?watch=1&labelSelector=watched%3Dyes"
	var codes countCodes
	var open, peak atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50) // opening concurrency
	for i := 0; i < e.p.watches && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One connection each, as separate clients would: every
			// watch holds a file descriptor in the hub.
			code, body, err := openStream(ctx, a.http1, url)
			<-sem
			if err != nil {
				if ctx.Err() == nil {
					codes.add(0)
				}
				return
			}
			codes.add(code)
			if code != http.StatusOK {
				body.Close()
				return
			}
			peak.Store(max(peak.Load(), open.Add(1)))
			s := bufio.NewScanner(body)
			s.Buffer(make([]byte, 64<<10), 1<<20)
			for s.Scan() {
			}
			open.Add(-1)
			body.Close()
		}()
	}
	writes := 0
	for ctx.Err() == nil {
		sleep(ctx, 200*time.Millisecond)
		cm.Data["v"] = fmt.Sprint(writes)
		if got, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
			cm, writes = got, writes+1
		} else if ctx.Err() == nil {
			if cur, gerr := cms.Get(ctx, "watched", metav1.GetOptions{}); gerr == nil {
				cm = cur
			}
		}
	}
	wg.Wait()
	n.add("%d watches asked: %s; %d open at most; %d writes", e.p.watches, codes.String(), peak.Load(), writes)
	return nil
}

// openStream GETs url and returns the response's status and body once the
// headers arrived; the body stays open until ctx ends.
func openStream(ctx context.Context, c *http.Client, url string) (int, io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, resp.Body, nil
}

// B7: ConfigMaps owned by owners that do not exist.
func orphanFlood(ctx context.Context, e *env, n *note) error {
	cms := e.attacker.cs.CoreV1().ConfigMaps("default")
	t0 := time.Now()
	got, err := createUntilRefused(ctx, e.p.orphans, 4, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("orphan-%d", i), Labels: labels(),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("ghost-%d", i), UID: uuid.NewUUID()}},
		}}
		_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	n.add("%d/%d orphans in %s %s", got, e.p.orphans, time.Since(t0).Round(time.Second), refusal(err))
	<-ctx.Done()
	return nil
}

// probeGC creates an owner and a dependent in the victim's home, deletes
// the owner and times until the garbage collector removed the dependent.
func probeGC(ctx context.Context, e *env) (time.Duration, error) {
	cms := e.victim.cs.CoreV1().ConfigMaps("default")
	i := probeSeq.Add(1)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%d", i)}}, metav1.CreateOptions{})
	if err != nil {
		return 0, err
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dependent-%d", i),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if _, err := cms.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	bg := metav1.DeletePropagationBackground
	t0 := time.Now()
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return 0, err
	}
	for {
		_, err := cms.Get(ctx, dep.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return time.Since(t0), nil
		}
		if ctx.Err() != nil {
			return 0, errors.Join(fmt.Errorf("dependent %s not collected after %s", dep.Name, time.Since(t0).Round(time.Second)), ctx.Err())
		}
		sleep(ctx, 50*time.Millisecond)
	}
}
