package workspaces

import (
	"context"
	"errors"
	"fmt"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Lookup reads what etcd records for path, bypassing the in-memory copy:
// deletion and orphan collection act on it, so a replica whose watch lags
// must not purge by a stale mapping. It checks that both records agree.
func (x *Index) Lookup(ctx context.Context, path cluster.Path) (Info, error) {
	id, err := x.lookupPath(ctx, path)
	if err != nil {
		return Info{}, err
	}
	rec, err := x.read(ctx, id)
	if err != nil {
		return Info{}, err
	}
	if rec.Path != path {
		return Info{}, fmt.Errorf("workspace records disagree: %s maps to %s, which records %s", path, id, rec.Path)
	}
	return Info{ID: id, Path: path, Terminating: rec.Terminating}, nil
}

// Child returns what the index records for the Workspace name stored in
// the logical cluster parent: always its path, and its id when that path
// is allocated. This, not anything in the Workspace object, is what the
// hub deletes. ErrNotFound means parent itself is not recorded (it has
// been purged, and the Workspace object with it).
func (x *Index) Child(ctx context.Context, parent cluster.ID, name string) (Info, error) {
	if msgs := ValidateName(name, false); len(msgs) > 0 {
		return Info{}, fmt.Errorf("invalid workspace name %q: %v", name, msgs)
	}
	prec, err := x.read(ctx, parent)
	if err != nil {
		return Info{}, err
	}
	path := prec.Path.Join(name)
	info, err := x.Lookup(ctx, path)
	if errors.Is(err, ErrNotFound) {
		// Never allocated, or released by an interrupted purge.
		return Info{Path: path}, nil
	}
	return info, err
}
