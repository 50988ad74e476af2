package quota

import "context"

// check answers c as apply would (nil or an *Exceeded), recording nothing
// and taking no grant: a dry run's answer. Growth this replica's grants
// cover is admitted from memory, as apply admits it; the rest is judged
// against the records as etcd holds them now (read afresh: a dry run is
// rare, and must not be answered from a stale copy), with this replica's
// unwritten changes and the other replicas' grants, as commit judges it.
func (l *Ledger) check(ctx context.Context, c *change) error {
	pos, _ := c.delta.split()
	if pos.IsZero() {
		return nil
	}
	ck, tk := l.clusterKey(c.cluster), l.tenantKey(c.tenant)
	l.mu.Lock()
	now := l.clock.Now()
	cl, tl := l.loc[ck], l.loc[tk]
	covered := cl != nil && tl != nil && now.Sub(tl.granted) < grantTTL/2 && now.Sub(cl.granted) < grantTTL/2 &&
		cl.g.covers(pos) && tl.g.covers(pos)
	l.mu.Unlock()
	if covered {
		return nil
	}
	keys := []string{ck, tk}
	l.forget(keys...)
	cur, err := l.current(ctx, keys)
	if err != nil {
		return err
	}
	l.mu.Lock()
	used := make([]Usage, len(keys))
	for i, k := range keys {
		used[i] = cur[k].rec.Usage.Add(cur[k].rec.others(l.writerID, now))
		if lo := l.loc[k]; lo != nil {
			used[i] = used[i].Add(lo.c).Sub(lo.f)
		}
	}
	l.mu.Unlock()
	if err := refusal(WorkspaceQuotaName, c.ws, used[0], pos); err != nil {
		return err
	}
	return refusal(TenantQuotaName, c.ten, used[1], pos)
}
