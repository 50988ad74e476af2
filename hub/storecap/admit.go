package storecap

// What a write adds to the store, and the admission decision.
//
// A write that replaces a stored object (an update, a patch, an apply of
// an existing key) adds a new revision; the one it replaces stays in
// etcd's history until a compaction removes it. Only the difference
// between the two sizes is growth that stays: the replaced bytes are
// reclaimable. Counting them as growth let a tenant rewriting three
// 900 KB ConfigMaps with tiny patches, 10 at once, trip the refusal for
// everybody with the store half used (outside review 3, C-C: 64 → 122 MB
// of 256, mark 205). So the estimate keeps two sums: growth, which
// refuses at the mark, and rewrites, which make the monitor compact
// early instead (a kick, rate limited to one compaction per poll); the
// store is refused only when a poll finds it above the mark after that
// compaction. A tenant's rewrite loop is bounded by her write fairness
// and traffic budget, not by a refusal that hits everyone.

// write is the estimate of one admitted write.
type write struct {
	// growth is what the store keeps once history is compacted: a
	// create's size, or how much an update makes the object larger.
	growth int64
	// rewrite is what the write adds that a compaction reclaims: the
	// size of the revision it replaces, at most its own size.
	rewrite int64
}

// newWrite splits a write of size bytes replacing an object of old bytes
// (0 for a create).
func newWrite(size, old int64) write {
	r := min(size, max(old, 0))
	return write{growth: size - r, rewrite: r}
}

// careful reports whether admitted writes should be measured: above
// half of the mark, in use or in the file, where a burst between two
// polls could pass it.
func (m *Monitor) careful() bool {
	st := m.state.Load()
	return st.Known && (st.InUse >= m.hw/2 || st.Size >= m.hw/2)
}

// admit reports whether a create of about size bytes may go through,
// and counts it toward the estimate if so.
func (m *Monitor) admit(size int64, count bool) bool {
	return m.admitWrite(write{growth: size}, count)
}

// admitWrite reports whether a write may go through, and counts it
// toward the estimate if so.
func (m *Monitor) admitWrite(w write, count bool) bool {
	st := m.state.Load()
	if st.High {
		return false
	}
	if !st.Known || w.growth+w.rewrite == 0 {
		return true
	}
	growth := m.previous.Load() + m.pending.Load() + w.growth
	rewrites := m.prevRewrites.Load() + m.pendRewrites.Load() + w.rewrite
	if st.InUse+growth >= m.hw {
		return false
	}
	// The file is what etcd's quota counts. Free pages inside it may take
	// a write, or may not (a large value needs contiguous pages, and pages
	// freed under an open read stay taken), so between two polls every
	// admitted byte of growth is assumed to grow it: near the file mark
	// this bounds the burst per poll, not the total, since each poll
	// measures again. A 256 MiB external store without defragmentation
	// reached 299 MiB and NOSPACE in the noisy-neighbour benchmark with
	// the file checked only at the poll. Rewrites count only beyond the
	// file's free pages (what compactions freed): a rewrite loop reuses
	// the pages its compacted revisions left, and the file mark keeps
	// half of the rest of the quota for what does not fit.
	free := max(st.Size-st.InUse, 0)
	if st.Size+growth+max(rewrites-free, 0) >= m.fileMark {
		return false
	}
	if st.InUse+growth+rewrites >= m.hw || st.Size+growth+rewrites >= m.fileMark {
		// Replaced revisions would take the store to its mark: compact
		// them now rather than refuse everybody at the next poll.
		m.kick()
	}
	if count {
		m.pending.Add(w.growth)
		m.pendRewrites.Add(w.rewrite)
	}
	return true
}

// kick asks Run for a poll now; a poll already asked for is enough.
func (m *Monitor) kick() {
	select {
	case m.kicks <- struct{}{}:
	default:
	}
}
