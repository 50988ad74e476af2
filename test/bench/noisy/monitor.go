package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// renewPeriod is the hub's lease RetryPeriod (hub/leases DefaultTimings):
// the holder writes the Lease about once per period.
const renewPeriod = time.Second

// leaseWatch records every renewal of the edges provider's Lease
// (root, kube-system/provider-edges) seen through a watch, and reads the
// hub's log and /metrics for stops and restarts of the provider.
type leaseWatch struct {
	h       *benchkit.Hub
	metrics *http.Client
	cancel  context.CancelFunc
	mu      sync.Mutex
	renews  []time.Time
	lastRV  string
}

func startLeaseWatch(ctx context.Context, admin kubernetes.Interface, h *benchkit.Hub) *leaseWatch {
	hc, _ := rest.HTTPClientFor(h.Config(""))
	ctx, cancel := context.WithCancel(ctx)
	w := &leaseWatch{h: h, metrics: hc, cancel: cancel}
	go w.loop(ctx, admin)
	return w
}

func (w *leaseWatch) loop(ctx context.Context, admin kubernetes.Interface) {
	leases := admin.CoordinationV1().Leases("kube-system")
	sel := fields.OneTermEqualSelector("metadata.name", "provider-edges").String()
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			l, err := leases.List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				sleep(ctx, 500*time.Millisecond)
				continue
			}
			for i := range l.Items {
				w.see(&l.Items[i])
			}
			rv = l.ResourceVersion
		}
		wi, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			rv = ""
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok {
					w.see(l)
					rv = l.ResourceVersion
				}
			case watch.Bookmark:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok {
					rv = l.ResourceVersion
				}
			case watch.Error:
				rv = "" // e.g. 410 Gone: relist
			}
		}
		wi.Stop()
	}
}

func (w *leaseWatch) see(l *coordinationv1.Lease) {
	if l.Spec.RenewTime == nil || l.Spec.HolderIdentity == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.ResourceVersion == w.lastRV {
		return
	}
	w.lastRV = l.ResourceVersion
	w.renews = append(w.renews, l.Spec.RenewTime.Time)
}

// leaseStats is what the edges provider went through in one window.
type leaseStats struct {
	watched    bool
	seen       int // renewals seen in the window
	missed     int // renewals due but not written (from the Lease's renewTimes)
	fenceStops int // "Could not renew provider lease before its deadline"
	starts     int // the provider was (re)started by the lease gate
	restarts   int // wharf_provider_restarts_total{provider="edges"} grew by
}

// leaseMark is a point to measure a window from.
type leaseMark struct {
	at       time.Time
	log      logCounts
	restarts int
}

func (w *leaseWatch) mark(ctx context.Context) leaseMark {
	if w == nil {
		return leaseMark{at: time.Now()}
	}
	return leaseMark{at: time.Now(), log: countLog(w.h), restarts: w.restartsMetric(ctx)}
}

func (w *leaseWatch) since(ctx context.Context, m leaseMark) leaseStats {
	if w == nil {
		return leaseStats{}
	}
	end := w.mark(ctx)
	w.mu.Lock()
	renews := append([]time.Time(nil), w.renews...)
	w.mu.Unlock()
	return leaseStats{
		watched:    true,
		seen:       seenIn(renews, m.at, end.at),
		missed:     missedRenewals(renews, m.at, end.at, renewPeriod),
		fenceStops: end.log.fenceStops - m.log.fenceStops,
		starts:     end.log.starts - m.log.starts,
		restarts:   max(0, end.restarts-m.restarts),
	}
}

// missedRenewals counts renewals that were due in [from, to] but not
// written: each gap between consecutive renewal times ending in the window
// (and the gap from the last one to to) of g misses floor(g/period)−1. A
// renewal that is merely slow by less than a period misses none.
func missedRenewals(renews []time.Time, from, to time.Time, period time.Duration) int {
	missed := 0
	gap := func(a, b time.Time) int { return max(0, int(b.Sub(a)/period)-1) }
	var last time.Time
	for i, r := range renews {
		if i > 0 && r.After(from) && !r.After(to) {
			missed += gap(maxTime(renews[i-1], from), r)
		}
		if !r.After(to) {
			last = r
		}
	}
	if !last.IsZero() {
		missed += gap(maxTime(last, from), to)
	}
	return missed
}

// seenIn counts the renewals in [from, to].
func seenIn(renews []time.Time, from, to time.Time) int {
	n := 0
	for _, r := range renews {
		if !r.Before(from) && !r.After(to) {
			n++
		}
	}
	return n
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// logCounts are counts of the lease gate's log lines.
type logCounts struct{ fenceStops, starts int }

func countLog(h *benchkit.Hub) logCounts {
	var c logCounts
	f, err := os.Open(filepath.Join(filepath.Dir(h.DataDir()), "hub.log"))
	if err != nil {
		return c
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		switch {
		case strings.Contains(line, "Could not renew provider lease before its deadline"):
			c.fenceStops++
		case strings.Contains(line, "Holding single-replica provider; starting it"):
			c.starts++
		}
	}
	return c
}

// restartsMetric reads wharf_provider_restarts_total{provider="edges"}.
func (w *leaseWatch) restartsMetric(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.h.URL()+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := w.metrics.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return metricValue(bufio.NewScanner(resp.Body), `wharf_provider_restarts_total{provider="edges"}`)
}

// metricValue returns the integer value of the sample named exactly name
// (with its labels) in Prometheus text format, or 0.
func metricValue(s *bufio.Scanner, name string) int {
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(f)
			}
		}
	}
	return 0
}

// storeWatch samples the embedded etcd's size and alarms once a second.
type storeWatch struct {
	c        *clientv3.Client
	endpoint string
	quota    int64
	cancel   context.CancelFunc
	mu       sync.Mutex
	maxDB    int64 // largest dbSize since reset
	nospace  bool  // NOSPACE seen since reset
	everNS   bool  // NOSPACE seen at all
	lastDB   int64
}

func startStoreWatch(ctx context.Context, ep string, quota int64) (*storeWatch, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &storeWatch{c: c, endpoint: ep, quota: quota, cancel: cancel}
	s.sample(ctx)
	go func() {
		for ctx.Err() == nil {
			sleep(ctx, time.Second)
			s.sample(ctx)
		}
	}()
	return s, nil
}

func (s *storeWatch) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.c.Status(ctx, s.endpoint)
	al, aerr := s.c.AlarmList(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.lastDB = st.DbSize
		s.maxDB = max(s.maxDB, st.DbSize)
	}
	if aerr == nil {
		for _, a := range al.Alarms {
			if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
				s.nospace, s.everNS = true, true
			}
		}
	}
}

// storeStats is the store in one window.
type storeStats struct {
	maxDB, lastDB, quota int64
	nospace, nospaceNow  bool
}

// take returns the window since the last take and starts a new one.
func (s *storeWatch) take(ctx context.Context) storeStats {
	s.sample(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := storeStats{maxDB: s.maxDB, lastDB: s.lastDB, quota: s.quota, nospace: s.nospace}
	s.maxDB, s.nospace = s.lastDB, false
	return st
}

// alarmNow reports whether the NOSPACE alarm is armed right now.
func (s *storeWatch) alarmNow(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	al, err := s.c.AlarmList(ctx)
	if err != nil {
		return false
	}
	for _, a := range al.Alarms {
		if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// disarm frees the store the way an operator would after NOSPACE:
// compact to the current revision, defragment, disarm the alarm. The
// benchmark does it only after the hub failed to recover by itself, so
// the remaining attacks are measured on a working store.
func (s *storeWatch) disarm(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	st, err := s.c.Status(ctx, s.endpoint)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if _, err := s.c.Compact(ctx, st.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if _, err := s.c.Defragment(ctx, s.endpoint); err != nil {
		return fmt.Errorf("defragment: %w", err)
	}
	if _, err := s.c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: st.Header.MemberId, Alarm: etcdserverpb.AlarmType_NOSPACE}); err != nil {
		return fmt.Errorf("disarm: %w", err)
	}
	return nil
}

func (s *storeWatch) close() {
	s.cancel()
	_ = s.c.Close()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
