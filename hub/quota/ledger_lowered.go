package quota

// A grant is headroom sized under the ceilings in force when it was
// taken. A hub administrator may lower a ceiling (a quota.wharf.dev/
// annotation) while a replica holds a grant sized under the old one:
// admitting from that grant would pass the new ceiling by up to the whole
// grant (64 objects, 1 MiB). So writes are admitted from memory only
// under the ceilings the grant was sized for; any other write goes
// through a transaction, which checks the record against the ceilings of
// the write and cuts the grant to the room they leave.

// sizedFor reports whether lo's grant was sized under lim.
func (lo *local) sizedFor(lim Limits) bool { return lo.lim == lim }

// clampGrant cuts g to the room lim leaves above used, per bounded
// component. A grant is always taken within that room, so this changes
// nothing unless the ceiling was lowered since.
func clampGrant(g Usage, lim Limits, used Usage) Usage {
	room := lim.headroom(used)
	clamp := func(g, r int64) int64 {
		if r < 0 {
			return g
		}
		return min(g, r)
	}
	return Usage{Objects: clamp(g.Objects, room.Objects), Bytes: clamp(g.Bytes, room.Bytes), Workspaces: clamp(g.Workspaces, room.Workspaces)}
}
