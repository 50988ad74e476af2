package workspaces

import (
	"sort"
)

// Known returns the workspaces this replica's in-memory copy holds, root
// included and terminating ones left out, sorted by path. It reads no etcd:
// callers that enumerate workspaces per request (whoami) must stay cheap,
// and a workspace created a moment ago through another replica appears as
// soon as the watch delivers it.
func (x *Index) Known() []Info {
	x.mu.RLock()
	out := make([]Info, 0, len(x.byID))
	for id, rec := range x.byID {
		if !rec.Terminating {
			out = append(out, Info{ID: id, Path: rec.Path})
		}
	}
	x.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
