package quota

// Componentwise helpers for Usage.

func (u Usage) Sub(d Usage) Usage { return u.Add(d.Neg()) }

func minU(a, b Usage) Usage {
	return Usage{Objects: min(a.Objects, b.Objects), Bytes: min(a.Bytes, b.Bytes), Workspaces: min(a.Workspaces, b.Workspaces)}
}

func maxU(a, b Usage) Usage {
	return Usage{Objects: max(a.Objects, b.Objects), Bytes: max(a.Bytes, b.Bytes), Workspaces: max(a.Workspaces, b.Workspaces)}
}

// split returns u's positive and (negated) negative parts.
func (u Usage) split() (pos, neg Usage) {
	return maxU(u, Usage{}), maxU(u.Neg(), Usage{})
}

// covers reports whether u is at least d in every component.
func (u Usage) covers(d Usage) bool {
	return u.Objects >= d.Objects && u.Bytes >= d.Bytes && u.Workspaces >= d.Workspaces
}

// headroom is what lim leaves above used, per component; a component
// without a bound has unbounded room (-1 stands for it).
func (l Limits) headroom(used Usage) Usage {
	room := func(lim, u int64) int64 {
		if lim <= 0 {
			return -1
		}
		return max(lim-u, 0)
	}
	return Usage{Objects: room(l.Objects, used.Objects), Bytes: room(l.Bytes, used.Bytes), Workspaces: room(l.Workspaces, used.Workspaces)}
}

// chunk is the extra headroom a replica takes with a reservation of d,
// so that the tenant's next writes are admitted from memory: the default
// per component, at most a quarter of the room left, in whole multiples
// of d (a fragment smaller than a write would only keep room from the
// other replicas), none where d needs none.
func chunk(def, room, d Usage) Usage {
	part := func(def, r, d int64) int64 {
		if d <= 0 {
			return 0
		}
		c := def
		if r >= 0 {
			c = min(def, r/4)
		}
		return c / d * d
	}
	return Usage{Objects: part(def.Objects, room.Objects, d.Objects), Bytes: part(def.Bytes, room.Bytes, d.Bytes), Workspaces: part(def.Workspaces, room.Workspaces, d.Workspaces)}
}
