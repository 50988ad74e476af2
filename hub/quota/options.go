package quota

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Defaults keep one tenant below 1/8 of a default (8 GiB) etcd quota; the
// store's high-water mark protects smaller stores as a whole.
const (
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
	// ReconcileInterval is how often usage is recomputed from the store.
	ReconcileInterval time.Duration
	// Event write rates per workspace and per tenant (EventRate).
	WorkspaceEventQPS   float32
	WorkspaceEventBurst int
	TenantEventQPS      float32
	TenantEventBurst    int
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Workspace:         Limits{Objects: DefaultMaxWorkspaceObjects, Bytes: DefaultMaxWorkspaceBytes, Workspaces: DefaultMaxChildWorkspaces},
		Tenant:            Limits{Objects: DefaultMaxTenantObjects, Bytes: DefaultMaxTenantBytes, Workspaces: DefaultMaxTenantWorkspaces},
		ReconcileInterval: DefaultReconcileInterval,
		WorkspaceEventQPS: DefaultWorkspaceEventQPS, WorkspaceEventBurst: DefaultWorkspaceEventBurst,
		TenantEventQPS: DefaultTenantEventQPS, TenantEventBurst: DefaultTenantEventBurst,
	}
}

// AddFlags registers the --max-workspace-*, --max-tenant-* and
// --max-child-workspaces flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&o.Workspace.Objects, "max-workspace-objects", o.Workspace.Objects,
		"Most objects one workspace may store (every kind, events included). 0 means no bound. Hub admins may override it per workspace with the annotation "+AnnotationMaxObjects+" on its Workspace.")
	fs.Int64Var(&o.Workspace.Bytes, "max-workspace-bytes", o.Workspace.Bytes,
		"Most bytes (as stored in etcd) one workspace's objects may take. 0 means no bound. Override: "+AnnotationMaxBytes+".")
	fs.Int64Var(&o.Workspace.Workspaces, "max-child-workspaces", o.Workspace.Workspaces,
		"Most child Workspaces one workspace may hold directly. 0 means no bound. Override: "+AnnotationMaxChildWorkspaces+".")
	fs.Int64Var(&o.Tenant.Objects, "max-tenant-objects", o.Tenant.Objects,
		"Most objects one tenant (a home tree or a top-level workspace tree) may store. 0 means no bound. Override on the tree's top Workspace: "+AnnotationMaxTenantObjects+".")
	fs.Int64Var(&o.Tenant.Bytes, "max-tenant-bytes", o.Tenant.Bytes,
		"Most bytes one tenant's objects may take in etcd. 0 means no bound. Override: "+AnnotationMaxTenantBytes+".")
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
}

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
