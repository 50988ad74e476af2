package quota

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Defaults keep one tenant below 1/8 of a default (8 GiB) etcd quota and
// one workspace below 1/32 of it. On a smaller store the byte defaults
// shrink to the same shares (FitToStore), so that one tenant cannot take
// a small store to its high-water mark, where everybody's writes are
// refused; the mark protects the store as a whole.
const (
	TenantStoreShare    = 8
	WorkspaceStoreShare = 32

	DefaultMaxWorkspaceObjects = 50_000
	DefaultMaxWorkspaceBytes   = 256 << 20
	DefaultMaxChildWorkspaces  = 100
	DefaultMaxTenantObjects    = 200_000
	DefaultMaxTenantBytes      = 1 << 30
	DefaultMaxTenantWorkspaces = 250
	DefaultReconcileInterval   = 5 * time.Minute
)

// Options are the hub-wide ceilings (flags); 0 means no bound.
type Options struct {
	Workspace Limits
	Tenant    Limits
	// workspaceBytesSet and tenantBytesSet record an explicit byte flag,
	// which FitToStore leaves as it is.
	workspaceBytesSet, tenantBytesSet bool
	// ReconcileInterval is how often usage is recomputed from the store.
	ReconcileInterval time.Duration
	// Event write rates per workspace and per tenant (EventRate).
	WorkspaceEventQPS   float32
	WorkspaceEventBurst int
	TenantEventQPS      float32
	TenantEventBurst    int
	// Write rate per tenant (WriteRate).
	TenantWritesPerSecond float64
	TenantWriteBurst      int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Workspace:         Limits{Objects: DefaultMaxWorkspaceObjects, Bytes: DefaultMaxWorkspaceBytes, Workspaces: DefaultMaxChildWorkspaces},
		Tenant:            Limits{Objects: DefaultMaxTenantObjects, Bytes: DefaultMaxTenantBytes, Workspaces: DefaultMaxTenantWorkspaces},
		ReconcileInterval: DefaultReconcileInterval,
		WorkspaceEventQPS: DefaultWorkspaceEventQPS, WorkspaceEventBurst: DefaultWorkspaceEventBurst,
		TenantEventQPS: DefaultTenantEventQPS, TenantEventBurst: DefaultTenantEventBurst,
		TenantWritesPerSecond: DefaultTenantWritesPerSecond, TenantWriteBurst: DefaultTenantWriteBurst,
	}
}

// AddFlags registers the --max-workspace-*, --max-tenant-* and
// --max-child-workspaces flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&o.Workspace.Objects, "max-workspace-objects", o.Workspace.Objects,
		"Most objects one workspace may store (every kind, events included). 0 means no bound. Hub admins may override it per workspace with the annotation "+AnnotationMaxObjects+" on its Workspace.")
	fs.Var(&setInt64{v: &o.Workspace.Bytes, set: &o.workspaceBytesSet}, "max-workspace-bytes",
		"Most bytes (as stored in etcd) one workspace's objects may take. 0 means no bound. Unset, it is the smaller of 256 MiB and 1/32 of the store's quota (--etcd-quota-backend-bytes). Override: "+AnnotationMaxBytes+".")
	fs.Int64Var(&o.Workspace.Workspaces, "max-child-workspaces", o.Workspace.Workspaces,
		"Most child Workspaces one workspace may hold directly. 0 means no bound. Override: "+AnnotationMaxChildWorkspaces+".")
	fs.Int64Var(&o.Tenant.Objects, "max-tenant-objects", o.Tenant.Objects,
		"Most objects one tenant (a home tree or a top-level workspace tree) may store. 0 means no bound. Override on the tree's top Workspace: "+AnnotationMaxTenantObjects+".")
	fs.Var(&setInt64{v: &o.Tenant.Bytes, set: &o.tenantBytesSet}, "max-tenant-bytes",
		"Most bytes one tenant's objects may take in etcd. 0 means no bound. Unset, it is the smaller of 1 GiB and 1/8 of the store's quota. Override: "+AnnotationMaxTenantBytes+".")
	fs.Int64Var(&o.Tenant.Workspaces, "max-tenant-workspaces", o.Tenant.Workspaces,
		"Most Workspaces one tenant's tree may hold. 0 means no bound. Override: "+AnnotationMaxTenantWorkspaces+".")
	fs.DurationVar(&o.ReconcileInterval, "quota-reconcile-interval", o.ReconcileInterval,
		"How often stored usage is recomputed from etcd, correcting drift (expired events, crashed writes).")
	fs.Float32Var(&o.WorkspaceEventQPS, "max-workspace-event-qps", o.WorkspaceEventQPS,
		"Events one workspace may create or update per second (a token bucket; beyond it 429). 0 means no bound. Hub admins and the hub are exempt.")
	fs.IntVar(&o.WorkspaceEventBurst, "max-workspace-event-burst", o.WorkspaceEventBurst, "Burst of --max-workspace-event-qps.")
	fs.Float32Var(&o.TenantEventQPS, "max-tenant-event-qps", o.TenantEventQPS,
		"Events one tenant's tree may create or update per second. 0 means no bound.")
	fs.IntVar(&o.TenantEventBurst, "max-tenant-event-burst", o.TenantEventBurst, "Burst of --max-tenant-event-qps.")
	fs.Float64Var(&o.TenantWritesPerSecond, "tenant-writes-per-second", o.TenantWritesPerSecond,
		"Writes to the store (creates, updates, patches, deletes, each item of a deletecollection) one tenant's requests may make per second, "+
			"past --tenant-write-burst; a write over it waits for its turn, or gets 429 if it would wait past its request's deadline. 0 means no bound. Hub admins and the hub are exempt.")
	fs.IntVar(&o.TenantWriteBurst, "tenant-write-burst", o.TenantWriteBurst, "Writes one tenant may make at once before --tenant-writes-per-second applies.")
}

// FitToStore lowers the byte ceilings that no flag set to their share of
// the store's quota (bytes; 0 when unknown leaves them as they are).
func (o *Options) FitToStore(quota int64) {
	if quota <= 0 {
		return
	}
	if !o.workspaceBytesSet && o.Workspace.Bytes > 0 {
		o.Workspace.Bytes = min(o.Workspace.Bytes, quota/WorkspaceStoreShare)
	}
	if !o.tenantBytesSet && o.Tenant.Bytes > 0 {
		o.Tenant.Bytes = min(o.Tenant.Bytes, quota/TenantStoreShare)
	}
}

// setInt64 is an int64 flag that records whether it was given.
type setInt64 struct {
	v   *int64
	set *bool
}

func (f *setInt64) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f *setInt64) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", s, err)
	}
	*f.v, *f.set = n, true
	return nil
}

func (f *setInt64) Type() string { return "int" }

// Validate reports invalid options.
func (o *Options) Validate() []error {
	var errs []error
	for name, v := range map[string]int64{
		"--max-workspace-objects": o.Workspace.Objects, "--max-workspace-bytes": o.Workspace.Bytes,
		"--max-child-workspaces": o.Workspace.Workspaces, "--max-tenant-objects": o.Tenant.Objects,
		"--max-tenant-bytes": o.Tenant.Bytes, "--max-tenant-workspaces": o.Tenant.Workspaces,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		}
	}
	if o.WorkspaceEventQPS < 0 || o.TenantEventQPS < 0 || o.WorkspaceEventBurst < 1 || o.TenantEventBurst < 1 {
		errs = append(errs, fmt.Errorf("event rates must not be negative, and bursts at least 1"))
	}
	if o.TenantWritesPerSecond < 0 || o.TenantWritesPerSecond > 0 && o.TenantWriteBurst < 1 {
		errs = append(errs, fmt.Errorf("--tenant-writes-per-second must not be negative, and --tenant-write-burst at least 1"))
	}
	if o.ReconcileInterval < time.Second {
		errs = append(errs, fmt.Errorf("--quota-reconcile-interval must be at least 1s"))
	}
	return errs
}

// Annotations on a Workspace object that override the flags; only hub
// administrators may set or change them (Admission).
const (
	AnnotationPrefix              = "quota.wharf.dev/"
	AnnotationMaxObjects          = AnnotationPrefix + "max-objects"
	AnnotationMaxBytes            = AnnotationPrefix + "max-bytes"
	AnnotationMaxChildWorkspaces  = AnnotationPrefix + "max-child-workspaces"
	AnnotationMaxTenantObjects    = AnnotationPrefix + "max-tenant-objects"
	AnnotationMaxTenantBytes      = AnnotationPrefix + "max-tenant-bytes"
	AnnotationMaxTenantWorkspaces = AnnotationPrefix + "max-tenant-workspaces"
)

// override returns l with the annotations' values where they parse;
// an unparsable value leaves the flag's bound in force.
func override(l Limits, ann map[string]string, objects, bytes, workspaces string) Limits {
	set := func(dst *int64, key string) {
		if v, ok := ann[key]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				*dst = n
			}
		}
	}
	set(&l.Objects, objects)
	set(&l.Bytes, bytes)
	set(&l.Workspaces, workspaces)
	return l
}
