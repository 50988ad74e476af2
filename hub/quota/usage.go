package quota

import (
	"fmt"
	"sort"
	"strings"
)

// Resource names as they appear in "exceeded quota" messages and in
// usage reports.
const (
	ResourceObjects    = "count/objects"
	ResourceBytes      = "storage/bytes"
	ResourceWorkspaces = "count/workspaces.tenancy.wharf.dev"
)

// Usage is what one workspace or tenant stores.
type Usage struct {
	Objects    int64 `json:"objects"`
	Bytes      int64 `json:"bytes"`
	Workspaces int64 `json:"workspaces"`
}

// Add returns u+d.
func (u Usage) Add(d Usage) Usage {
	return Usage{Objects: u.Objects + d.Objects, Bytes: u.Bytes + d.Bytes, Workspaces: u.Workspaces + d.Workspaces}
}

// Neg returns -u.
func (u Usage) Neg() Usage {
	return Usage{Objects: -u.Objects, Bytes: -u.Bytes, Workspaces: -u.Workspaces}
}

// IsZero reports a usage of nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// Grows reports whether adding u could take a usage over a limit.
func (u Usage) Grows() bool { return u.Objects > 0 || u.Bytes > 0 || u.Workspaces > 0 }

// Limits are ceilings; 0 means no bound.
type Limits struct {
	Objects    int64
	Bytes      int64
	Workspaces int64
}

// exceeded returns the resources for which used+req passes l, with
// req > 0, as kube's ResourceQuota admission reports them.
func (l Limits) exceeded(used, req Usage) (names []string, requested, usedOut, limited map[string]int64) {
	check := func(name string, lim, u, r int64) {
		if lim <= 0 || r <= 0 || u+r <= lim {
			return
		}
		if requested == nil {
			requested, usedOut, limited = map[string]int64{}, map[string]int64{}, map[string]int64{}
		}
		names = append(names, name)
		requested[name], usedOut[name], limited[name] = r, u, lim
	}
	check(ResourceObjects, l.Objects, used.Objects, req.Objects)
	check(ResourceBytes, l.Bytes, used.Bytes, req.Bytes)
	check(ResourceWorkspaces, l.Workspaces, used.Workspaces, req.Workspaces)
	return names, requested, usedOut, limited
}

// Exceeded is a refused reservation. Error words it as kube-apiserver's
// ResourceQuota admission does (plugin/resourcequota/controller.go):
// "exceeded quota: <name>, requested: <r>=<n>, used: ..., limited: ...".
type Exceeded struct {
	Quota     string
	Requested map[string]int64
	Used      map[string]int64
	Limited   map[string]int64
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
		e.Quota, prettyPrint(e.Requested), prettyPrint(e.Used), prettyPrint(e.Limited))
}

// prettyPrint is upstream's: sorted name=value pairs joined by commas.
func prettyPrint(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// Quota names in refusals.
const (
	WorkspaceQuotaName = "wharf-workspace-limits"
	TenantQuotaName    = "wharf-tenant-limits"
)
