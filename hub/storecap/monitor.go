package storecap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Config configures a Monitor.
type Config struct {
	Client *clientv3.Client
	// Endpoints are the members to measure and defragment.
	Endpoints []string
	// Quota is etcd's backend quota in bytes.
	Quota int64
	// HighWater is the share of Quota, in use, past which non-admin
	// writes are refused.
	HighWater float64
	// Interval is the poll period.
	Interval time.Duration
	// Defrag lets the monitor defragment the members.
	Defrag bool
	// Clock drives the polls and the gaps between compactions and
	// defragmentations.
	Clock clock.WithTicker
	// SafeRevision, if set, is the least revision every watch cache has
	// read (hub/storage CacheProgress). The monitor compacts past it only
	// when etcd nears its quota: a cache whose watch is compacted past
	// relists and closes every watch of its resource.
	SafeRevision func() int64
}

// Recorder is told of crossings and disarms, to record them as Events.
type Recorder func(eventtype, reason, message string)

// State is what the last poll measured.
type State struct {
	// Known is false until a poll succeeded; an unknown store refuses
	// nothing (etcd would refuse what does not fit).
	Known bool
	// Size and InUse are the largest member's dbSize and dbSizeInUse.
	Size, InUse int64
	// Alarm is true while a NOSPACE alarm is armed.
	Alarm bool
	// High is true while writes are refused.
	High bool
}

// Monitor keeps the store below its quota; see the package doc.
type Monitor struct {
	cfg Config
	hw  int64 // high-water mark in bytes
	low int64 // the mark to go below before writes are let in again
	// fileMark bounds the file (dbSize), halfway from the mark to the
	// quota: etcd's quota counts the file, and without defragmentation
	// (an external cluster) a fragmented file can near the quota while
	// the bytes in use are below the mark.
	fileMark int64

	state atomic.Pointer[State]
	// pending estimates the bytes admitted since the last poll, and
	// previous those admitted in the interval before it: etcd commits in
	// batches, so a poll may not see a write admitted just before it.
	pending, previous atomic.Int64
	// pendRewrites and prevRewrites are the same for the bytes of
	// replaced revisions (admit.go).
	pendRewrites, prevRewrites atomic.Int64
	recorder                   atomic.Pointer[Recorder]
	// kicks asks Run for a poll before the next tick (admit.go).
	kicks chan struct{}

	mu             sync.Mutex // serialises Sync
	lastCompactRev int64
	lastCompact    time.Time
	// checkpoint is the revision seen at the last early compaction
	// (above half the mark): the next one compacts up to it, keeping
	// one gap of history as the apiserver's compactor keeps one interval.
	checkpoint int64
	lastDefrag time.Time
	lastRotate time.Time
	// lastRev is the revision the previous poll saw, and lastReclaim
	// when the monitor last compacted to it for rewrites.
	lastRev     int64
	lastReclaim time.Time
}

// compactGap and defragGap, in polls, bound how often the monitor
// compacts and defragments (see the package doc).
const (
	compactGap = 5
	defragGap  = 10
)

// New returns a monitor; Run starts it.
func New(cfg Config) *Monitor {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	hw := int64(float64(cfg.Quota) * cfg.HighWater)
	m := &Monitor{cfg: cfg, hw: hw, low: hw - cfg.Quota/20, fileMark: hw + (cfg.Quota-hw)/2, kicks: make(chan struct{}, 1)}
	m.state.Store(&State{})
	quotaBytes.Set(float64(cfg.Quota))
	return m
}

// SetRecorder sets where crossings are reported; the hub's event
// pipeline exists only once the server is built.
func (m *Monitor) SetRecorder(r Recorder) { m.recorder.Store(&r) }

// State returns the last measure.
func (m *Monitor) State() State { return *m.state.Load() }

// Quota returns the quota the monitor works with.
func (m *Monitor) Quota() int64 { return m.cfg.Quota }

// HighWaterBytes returns the mark in bytes.
func (m *Monitor) HighWaterBytes() int64 { return m.hw }

// Run polls until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := m.cfg.Clock.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		if err := m.Sync(ctx); err != nil && ctx.Err() == nil {
			pollErrors.Inc()
			klog.ErrorS(err, "Store monitor")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-m.kicks:
			// Rewrites near the mark asked for a poll; a kick is taken
			// at most every quarter of a poll, so they cannot make the
			// monitor spin (compactions have their own gap).
			select {
			case <-ctx.Done():
				return
			case <-m.cfg.Clock.After(max(m.cfg.Interval/4, 100*time.Millisecond)):
			}
		}
	}
}

// measure is one reading of every member.
type measure struct {
	size, inUse, rev int64
	alarms           []*pb.AlarmMember // NOSPACE only
}

func (m *Monitor) measure(ctx context.Context) (measure, error) {
	var r measure
	for _, ep := range m.cfg.Endpoints {
		st, err := m.cfg.Client.Status(ctx, ep)
		if err != nil {
			return r, fmt.Errorf("etcd status of %s: %w", ep, err)
		}
		r.size, r.inUse = max(r.size, st.DbSize), max(r.inUse, st.DbSizeInUse)
		if st.Header != nil {
			r.rev = max(r.rev, st.Header.Revision)
		}
	}
	al, err := m.cfg.Client.AlarmList(ctx)
	if err != nil {
		return r, fmt.Errorf("etcd alarms: %w", err)
	}
	for _, a := range al.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			r.alarms = append(r.alarms, a)
		}
	}
	return r, nil
}

// Sync measures the store once, compacts, defragments and disarms as
// needed, and decides whether writes are refused.
func (m *Monitor) Sync(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.measure(ctx)
	if err != nil {
		return err
	}
	now := m.cfg.Clock.Now()
	m.rotate(now)
	firstRev := r.rev
	alarm := len(r.alarms) > 0
	gap := func(last time.Time, polls int) bool {
		return last.IsZero() || now.Sub(last) >= time.Duration(polls)*m.cfg.Interval
	}
	// Deleted data counts in dbSizeInUse until its revisions are
	// compacted; the apiserver compacts only every few minutes.
	// While writes are refused the store must get back below the low
	// mark, so compaction goes on until it does.
	mark := m.hw
	if m.state.Load().High {
		mark = m.low
	}
	over := alarm || r.inUse >= mark || r.size >= m.hw
	// Replaced revisions admitted since the last polls would take the
	// store to its mark (admit.go kicked this poll).
	growth, rewrites := m.previous.Load()+m.pending.Load(), m.prevRewrites.Load()+m.pendRewrites.Load()
	pressure := r.inUse+growth+rewrites >= m.hw || r.size+growth+max(rewrites-max(r.size-r.inUse, 0), 0) >= m.fileMark ||
		// In the careful zone, rewrites worth a hundredth of the quota
		// are compacted away at the next poll rather than after five:
		// their revisions would otherwise grow the file.
		((r.inUse >= m.hw/2 || r.size >= m.hw/2) && rewrites >= m.cfg.Quota/100)
	if target := m.safe(r.rev, alarm || r.size >= m.fileMark); over && target > m.lastCompactRev && gap(m.lastCompact, compactGap) {
		if err := m.compact(ctx, target); err != nil {
			return err
		}
		m.lastCompact = now
		if r, err = m.measure(ctx); err != nil {
			return err
		}
	} else if target := m.safe(m.lastRev, false); (over || pressure) && target > m.lastCompactRev && gap(m.lastReclaim, 1) {
		// Before refusing anybody, reclaim what rewrites replaced: compact
		// to the revision the previous poll saw, at most once a poll. The
		// watch caches keep that poll's history (one compacted past would
		// relist, closing every watch of its resource), and the
		// compaction's cost follows the rewrites the tenant paid for.
		if err := m.compact(ctx, target); err != nil {
			return err
		}
		m.lastReclaim = now
		if r, err = m.measure(ctx); err != nil {
			return err
		}
		reclaims.Inc()
	} else if r.inUse >= m.hw/2 && gap(m.lastCompact, compactGap) {
		// Old revisions count in dbSizeInUse but in no tenant's quota:
		// one tenant rewriting a few large objects in a loop (outside
		// review row 29) took the store from 36 MB to its mark in 45 s
		// within her byte ceiling. From half the mark on, history older
		// than one gap is compacted away, so rewrites cannot pile up.
		if target := m.safe(m.checkpoint, false); target > m.lastCompactRev {
			if err := m.compact(ctx, target); err != nil {
				return err
			}
			if r, err = m.measure(ctx); err != nil {
				return err
			}
		}
		m.checkpoint, m.lastCompact = r.rev, now
	}
	// etcd's quota counts the file (dbSize), which only a
	// defragmentation shrinks.
	if frag := r.size - r.inUse; m.cfg.Defrag && frag > 0 && gap(m.lastDefrag, defragGap) &&
		(alarm || (r.size >= m.hw && frag >= r.size/10) || frag >= m.cfg.Quota/4) {
		if err := m.defrag(ctx); err != nil {
			return err
		}
		m.lastDefrag = now
		if r, err = m.measure(ctx); err != nil {
			return err
		}
	}
	if alarm && r.size < m.hw {
		if err := m.disarm(ctx, r); err != nil {
			return err
		}
		if r, err = m.measure(ctx); err != nil {
			return err
		}
		alarm = len(r.alarms) > 0
	}
	prev := m.state.Load()
	high := alarm || r.inUse >= m.hw || r.size >= m.fileMark || (prev.High && r.inUse >= m.low)
	m.state.Store(&State{Known: true, Size: r.size, InUse: r.inUse, Alarm: alarm, High: high})
	m.lastRev = firstRev
	sizeBytes.Set(float64(r.size))
	inUseBytes.Set(float64(r.inUse))
	highWater.Set(b2f(high))
	nospace.Set(b2f(alarm))
	switch {
	case high && !prev.High:
		klog.InfoS("Store above its high-water mark: refusing non-admin writes", "inUse", r.inUse, "size", r.size, "highWater", m.hw, "quota", m.cfg.Quota, "alarm", alarm)
		msg := fmt.Sprintf("The hub's store is above its high-water mark: %d of %d bytes in use (mark %d, file %d bytes, file mark %d, NOSPACE alarm %t); creates and updates by non-admins are refused", r.inUse, m.cfg.Quota, m.hw, r.size, m.fileMark, alarm)
		if !m.cfg.Defrag && r.size >= m.fileMark {
			// Only a defragmentation shrinks the file, and this hub may
			// not run one on an external cluster.
			msg += "; the database file stays this large until its members are defragmented (etcdctl defrag, or run the hub with --etcd-defrag-external)"
		}
		m.record("Warning", "StoreHighWater", msg)
	case !high && prev.High:
		klog.InfoS("Store below its high-water mark again: writes accepted", "inUse", r.inUse, "size", r.size, "highWater", m.hw)
		m.record("Normal", "StoreBelowHighWater", fmt.Sprintf("The hub's store is below its high-water mark again: %d of %d bytes in use; writes are accepted", r.inUse, m.cfg.Quota))
	}
	return nil
}

// safe bounds a compaction's revision by what every watch cache has
// read, unless the store is in danger (a NOSPACE alarm, or a file past
// its mark), where not filling comes first.
func (m *Monitor) safe(rev int64, danger bool) int64 {
	if danger || m.cfg.SafeRevision == nil {
		return rev
	}
	return min(rev, m.cfg.SafeRevision())
}

// rotate starts a new count of admitted writes once a poll has measured
// the store. A write is counted for at least a second and one poll: etcd
// commits every 100 ms, and a poll may not see what it admitted. It runs
// right after the measure, before any compaction or defragmentation: a
// slow one must not make the writes admitted meanwhile pile up.
func (m *Monitor) rotate(now time.Time) {
	if now.Sub(m.lastRotate) >= max(m.cfg.Interval, time.Second) {
		m.previous.Store(m.pending.Swap(0))
		m.prevRewrites.Store(m.pendRewrites.Swap(0))
		m.lastRotate = now
	}
}

func (m *Monitor) compact(ctx context.Context, rev int64) error {
	_, err := m.cfg.Client.Compact(ctx, rev, clientv3.WithCompactPhysical())
	// The apiserver's compactor may have got there first.
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("compacting etcd to revision %d: %w", rev, err)
	}
	m.lastCompactRev = rev
	compactions.Inc()
	klog.InfoS("Compacted etcd", "revision", rev)
	return nil
}

func (m *Monitor) defrag(ctx context.Context) error {
	for _, ep := range m.cfg.Endpoints {
		if _, err := m.cfg.Client.Defragment(ctx, ep); err != nil {
			return fmt.Errorf("defragmenting %s: %w", ep, err)
		}
		defrags.Inc()
		klog.InfoS("Defragmented etcd member", "endpoint", ep)
	}
	return nil
}

func (m *Monitor) disarm(ctx context.Context, r measure) error {
	for _, a := range r.alarms {
		if _, err := m.cfg.Client.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
			return fmt.Errorf("disarming NOSPACE on member %x: %w", a.MemberID, err)
		}
		alarmDisarms.Inc()
		klog.InfoS("Disarmed etcd's NOSPACE alarm", "member", fmt.Sprintf("%x", a.MemberID), "size", r.size, "quota", m.cfg.Quota)
		m.record("Normal", "StoreAlarmDisarmed", fmt.Sprintf("Disarmed etcd's NOSPACE alarm on member %x: the database file is %d bytes of a %d-byte quota again", a.MemberID, r.size, m.cfg.Quota))
	}
	return nil
}

func (m *Monitor) record(eventtype, reason, message string) {
	if r := m.recorder.Load(); r != nil {
		(*r)(eventtype, reason, message)
	}
}
