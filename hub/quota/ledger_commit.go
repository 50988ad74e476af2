package quota

import (
	"context"
	"fmt"
	"sort"

	"github.com/wharfhub/wharf/hub/etcd"
)

// txnClusters bounds the cluster records one ledger transaction writes
// beside its tenant's record. etcd refuses a transaction with more than
// --max-txn-ops (default 128) compares, or operations in either branch
// ("too many operations in txn request"), and a commit compares, writes
// and (Else) reads each of its records once. A tenant has up to
// --max-tenant-workspaces clusters (250 by default, any number by
// annotation), so a commit over all of them at once failed from the
// 128th on, and every write of the tenant with it (review 5, #12). Half
// of etcd's default leaves room for an external etcd run with a lower
// --max-txn-ops.
const txnClusters = etcd.MaxTxnOps / 2

// commitRun is one commit of a tenant's changes, written in transactions
// of at most txnClusters cluster records each, the tenant's record in
// every one (see commit).
type commitRun struct {
	tenant, tk string
	batch      []*change
	// snap is what commit took out of memory: the unwritten changes and,
	// when reserving, the grants of the records it writes.
	snap      map[string]local
	reserving bool
	reserves  map[string]bool
	// done is the tenant's share of the unwritten changes committed by
	// the chunks so far (the sums of their clusters'); reserved the
	// tenant's reservations committed so far, which the final chunk
	// takes from this replica's grant on the tenant's record.
	doneC, doneF, reserved Usage
}

// commit writes this replica's unwritten changes of the tenant, batch's
// reservations (or their refusals), and the grants left for the next
// writes, with compare-and-swap transactions over the tenant's record
// and its clusters' records.
//
// Only records with something to write take part: the tenant's, those
// reserved against, those with unwritten changes. A cluster record left
// out keeps its grant in play; spending it needs the tenant's grant as
// well, which a reserving commit has taken out of play.
//
// The clusters are written txnClusters at a time, each transaction with
// the tenant's record and exactly the clusters' part of the tenant's
// usage, so that every transaction leaves the tenant's record the sum of
// what it wrote to its clusters' records: no change is counted twice or
// lost between chunks, and a chunk that fails leaves only its own and
// the later chunks' changes unwritten (they go back to memory, their
// reservations are failed). This replica's grant on the tenant's record
// is rewritten by the final chunk only; until then the record holds the
// older grant, which other replicas count as used (they may refuse early,
// never admit past a ceiling).
func (l *Ledger) commit(ctx context.Context, tenant string, batch []*change) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	run := &commitRun{tenant: tenant, tk: l.tenantKey(tenant), batch: batch, snap: map[string]local{}, reserves: map[string]bool{}}
	// A batch that reserves takes the grants of the records it writes out
	// of play while its transactions are in flight: new writes of the
	// tenant queue for the next batch instead of spending grants this
	// batch rewrites. A flush leaves them in play: what is spent
	// meanwhile moves from grant to unwritten consumption, which leaves
	// their sum, the grant the record holds, as it was.
	for _, c := range batch {
		if !c.flush && !c.delta.IsZero() {
			run.reserving = true
			run.reserves[l.clusterKey(c.cluster)] = true
		}
	}
	var clusters []string
	l.mu.Lock()
	for k := range run.reserves {
		l.localOf(k, tenant)
	}
	l.localOf(run.tk, tenant)
	for k, lo := range l.loc {
		if lo.tenant != tenant || (k != run.tk && !run.reserves[k] && lo.c.IsZero() && lo.f.IsZero()) {
			continue
		}
		run.snap[k] = *lo
		lo.c, lo.f = Usage{}, Usage{}
		if run.reserving {
			lo.g = Usage{}
		}
		if k != run.tk {
			clusters = append(clusters, k)
		}
	}
	l.mu.Unlock()
	sort.Strings(clusters)
	groups := chunks(clusters, l.chunk)
	for i, group := range groups {
		final := i == len(groups)-1
		part := run.partOf(l, group, final)
		if err := l.commitChunk(ctx, run, group, part, final); err != nil {
			run.putBack(l, groups[i:], i == 0)
			fail(run.partsFrom(l, groups, i), err)
			return
		}
	}
}

// chunks splits keys into groups of at most n; there is always one group,
// empty when keys are.
func chunks(keys []string, n int) [][]string {
	if n < 1 {
		n = 1
	}
	if len(keys) == 0 {
		return [][]string{nil}
	}
	var out [][]string
	for len(keys) > n {
		out = append(out, keys[:n])
		keys = keys[n:]
	}
	return append(out, keys)
}

// partOf is the changes of batch a chunk over group answers: the
// reservations of its clusters, and on the final chunk the flushes.
func (run *commitRun) partOf(l *Ledger, group []string, final bool) []*change {
	in := make(map[string]bool, len(group))
	for _, k := range group {
		in[k] = true
	}
	var out []*change
	for _, c := range run.batch {
		if c.flush || c.delta.IsZero() {
			if final {
				out = append(out, c)
			}
		} else if in[l.clusterKey(c.cluster)] {
			out = append(out, c)
		}
	}
	return out
}

// partsFrom is the changes of the chunks from the i-th on.
func (run *commitRun) partsFrom(l *Ledger, groups [][]string, i int) []*change {
	var out []*change
	for j := i; j < len(groups); j++ {
		out = append(out, run.partOf(l, groups[j], j == len(groups)-1)...)
	}
	return out
}

// putBack returns to memory what the chunks in groups took out and did not
// write. The tenant's grant goes back only when no chunk was written:
// after one, the tenant's record holds usage reserved past the grant it
// still lists, and the grant in memory stays empty until the next commit
// recomputes it (the next writes go through a transaction).
func (run *commitRun) putBack(l *Ledger, groups [][]string, none bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, g := range groups {
		for _, k := range g {
			s := run.snap[k]
			lo := l.localOf(k, run.tenant)
			lo.c, lo.f = lo.c.Add(s.c), lo.f.Add(s.f)
			if run.reserving {
				lo.g = lo.g.Add(s.g)
			}
		}
	}
	s := run.snap[run.tk]
	lo := l.localOf(run.tk, run.tenant)
	lo.c, lo.f = lo.c.Add(s.c.Sub(run.doneC)), lo.f.Add(s.f.Sub(run.doneF))
	if run.reserving && none {
		lo.g = lo.g.Add(s.g)
	}
}

// commitChunk writes one chunk: the records of group and the tenant's,
// with one compare-and-swap transaction, recomputed after another
// replica changed one of them first.
func (l *Ledger) commitChunk(ctx context.Context, run *commitRun, group []string, part []*change, final bool) error {
	tk, snap := run.tk, run.snap
	keys := append([]string{tk}, group...)
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		cur, err := l.current(ctx, keys)
		if err != nil {
			return err
		}
		now := l.clock.Now()
		purged := purgedOf(keys, tk, cur, run.reserves)
		next := make(map[string]record, len(keys))
		grants := make(map[string]Usage, len(keys))
		for _, k := range keys {
			if purged[k] {
				continue
			}
			r := cur[k].rec
			if k != tk {
				r.Usage = r.Usage.Add(snap[k].c).Sub(snap[k].f)
			}
			next[k] = r
			// The grant held in memory, as far as the record still
			// holds it (another replica drops it once expired). The
			// tenant's is the final chunk's to renew; a chunk before
			// it only takes its reservations from the record's, as one
			// transaction would have (the grant in memory is out of
			// play meanwhile), so that the other replicas see what they
			// would have seen.
			if g, ok := r.Grants[l.writerID]; ok {
				switch {
				case k != tk:
					grants[k] = minU(snap[k].g, g.Usage)
				case final:
					grants[k] = minU(maxU(snap[k].g.Sub(run.reserved), Usage{}), g.Usage)
				default:
					grants[k] = g.Usage
				}
			}
		}
		// The tenant's part: what its written clusters' records gain (a
		// purged cluster's unwritten changes leave with it, as Purge
		// took what its record held), and on the final chunk whatever
		// of the tenant's unwritten changes no cluster of this commit
		// holds.
		ten := next[tk]
		var doneC, doneF Usage
		for _, k := range group {
			doneC, doneF = doneC.Add(snap[k].c), doneF.Add(snap[k].f)
			if !purged[k] {
				ten.Usage = ten.Usage.Add(snap[k].c).Sub(snap[k].f)
			}
		}
		if final {
			var allC, allF Usage
			for k, s := range snap {
				if k != tk {
					allC, allF = allC.Add(s.c), allF.Add(s.f)
				}
			}
			ten.Usage = ten.Usage.Add(snap[tk].c.Sub(allC)).Sub(snap[tk].f.Sub(allF))
		}
		next[tk] = ten
		var reserved Usage
		for _, c := range part {
			c.err = nil
			if c.delta.IsZero() {
				continue
			}
			ck := l.clusterKey(c.cluster)
			if c.enforce {
				if e := l.fits(WorkspaceQuotaName, c.ws, next[ck], c.delta, now); e != nil {
					c.err = e
					continue
				}
				if e := l.fits(TenantQuotaName, c.ten, next[tk], c.delta, now); e != nil {
					c.err = e
					continue
				}
			}
			reserved = reserved.Add(c.delta)
			for _, k := range []string{ck, tk} {
				r := next[k]
				r.Usage = r.Usage.Add(c.delta)
				next[k] = r
				grants[k] = maxU(grants[k].Sub(c.delta), Usage{})
			}
		}
		// Top up the grants for the next writes, within the room left.
		lims := map[string]Limits{}
		sizes := map[string]Usage{}
		for _, c := range part {
			if !c.flush {
				ck := l.clusterKey(c.cluster)
				lims[ck], sizes[ck] = c.ws, maxU(sizes[ck], c.delta)
			}
		}
		if final {
			for _, c := range run.batch {
				if !c.flush {
					lims[tk], sizes[tk] = c.ten, maxU(sizes[tk], c.delta)
				}
			}
		}
		for _, k := range keys {
			if purged[k] {
				continue
			}
			r := next[k]
			lim, known := lims[k]
			if known {
				grants[k] = clampGrant(grants[k], lim, r.Usage.Add(r.others(l.writerID, now)))
				room := lim.headroom(r.Usage.Add(r.others(l.writerID, now)).Add(grants[k]))
				grants[k] = grants[k].Add(chunk(defaultChunk, room, sizes[k]))
			}
			old, held := r.Grants[l.writerID]
			r.Grants = liveGrants(r.Grants, l.writerID, now)
			switch {
			case k == tk && !final:
				// Cut by this chunk's reservations, not renewed.
				if held && !grants[k].IsZero() {
					r.Grants[l.writerID] = grant{Usage: grants[k], Renewed: old.Renewed}
				} else {
					delete(r.Grants, l.writerID)
				}
			case grants[k].IsZero():
				delete(r.Grants, l.writerID)
			default:
				if r.Grants == nil {
					r.Grants = map[string]grant{}
				}
				r.Grants[l.writerID] = grant{Usage: grants[k], Renewed: now.Unix()}
			}
			next[k] = r
		}
		ok, err := l.swap(ctx, keys, cur, next, purged)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		l.mu.Lock()
		for _, k := range keys {
			if purged[k] {
				// Its grant went with its record; what arrived since
				// the snapshot goes at the next flush, the same way.
				lo := l.loc[k]
				if lo != nil && lo.c.IsZero() && lo.f.IsZero() {
					delete(l.loc, k)
				} else if lo != nil {
					lo.g = Usage{}
				}
				continue
			}
			if k == tk && !final {
				continue
			}
			lo := l.localOf(k, run.tenant)
			if run.reserving {
				lo.g = lo.g.Add(grants[k])
			} else {
				lo.g = minU(lo.g, grants[k])
			}
			lo.granted = now
			if lim, known := lims[k]; known {
				lo.lim = lim
			}
		}
		l.mu.Unlock()
		run.doneC, run.doneF = run.doneC.Add(doneC), run.doneF.Add(doneF)
		run.reserved = run.reserved.Add(reserved)
		return nil
	}
	return fmt.Errorf("usage records of tenant %s kept changing", run.tenant)
}
