package home

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// OwnerAnnotation on a home Workspace holds its owner's exact user name.
const OwnerAnnotation = "wharf.dev/home-owner"

// ErrNoHome means the user has no home workspace: not a person, or the
// home does not exist (yet).
var ErrNoHome = errors.New("no home workspace")

// Homes looks up a user's home workspace.
type Homes interface {
	// Home returns the path and logical cluster id of u's home, or
	// ErrNoHome. It never creates one.
	Home(ctx context.Context, u user.Info) (path, clusterID string, err error)
}

// Ensurer creates a user's home workspace if it is missing.
type Ensurer interface {
	Ensure(ctx context.Context, u user.Info) (path, clusterID string, err error)
}

// Store is the Workspace REST storage homes are created through.
type Store interface {
	rest.Creater
	rest.Getter
}

// bound is what Bind hands over once the server has built its storage.
type bound struct {
	store      Store
	initialize workspaces.Initializer
}

// Manager creates and looks up home workspaces.
type Manager struct {
	index *workspaces.Index
	authz authorizer.UnconditionalAuthorizer
	// Timing bounds; see NewManager.
	createTimeout, ownerWait, accessWait time.Duration

	bound  atomic.Pointer[bound]
	flight singleflight.Group
	// owners caches verified ownership, path → user name, so the hot path
	// never reads the Workspace object again.
	owners sync.Map
}

var (
	_ Homes   = &Manager{}
	_ Ensurer = &Manager{}
)

// NewManager returns a manager over index. authz, when set, is asked after
// creation until it grants the owner access to the new home, so that the
// request that created it can use it at once.
func NewManager(index *workspaces.Index, authz authorizer.UnconditionalAuthorizer) *Manager {
	return &Manager{index: index, authz: authz, createTimeout: time.Minute, ownerWait: 10 * time.Second, accessWait: 10 * time.Second}
}

// Bind hands the manager the Workspace storage and the workspace
// initializer, which exist only once the server is built. Until then
// Ensure fails and Home finds nothing it has not cached.
func (m *Manager) Bind(store Store, initialize workspaces.Initializer) {
	m.bound.Store(&bound{store: store, initialize: initialize})
}

// cached is the hot path: a home this replica has verified and still knows.
func (m *Manager) cached(p cluster.Path, name string) (workspaces.Info, bool) {
	if owner, ok := m.owners.Load(p); !ok || owner.(string) != name {
		return workspaces.Info{}, false
	}
	info, ok := m.index.Cached(string(p))
	return info, ok && !info.Terminating
}

// Home implements Homes.
func (m *Manager) Home(ctx context.Context, u user.Info) (string, string, error) {
	if !IsPerson(u) {
		return "", "", ErrNoHome
	}
	p := PathOf(u.GetName())
	if info, ok := m.cached(p, u.GetName()); ok {
		return string(info.Path), string(info.ID), nil
	}
	b := m.bound.Load()
	if b == nil {
		return "", "", ErrNoHome
	}
	info, err := m.lookup(ctx, b.store, p, u.GetName(), 0)
	if err != nil {
		return "", "", err
	}
	m.owners.Store(p, u.GetName())
	return string(info.Path), string(info.ID), nil
}

// errAbsent is lookup's answer for a home that does not exist.
var errAbsent = fmt.Errorf("%w: not created", ErrNoHome)

// lookup finds the existing home at p and checks that name owns it. A
// Workspace whose index entry exists but whose object is not stored yet is
// being created by another replica: lookup waits up to patience for it.
func (m *Manager) lookup(ctx context.Context, store Store, p cluster.Path, name string, patience time.Duration) (workspaces.Info, error) {
	resolve := m.index.Resolve
	if patience > 0 {
		// After AlreadyExists: the index's remembered miss, from the
		// lookup before this replica's create, predates the other
		// replica's creation; answering from it reported no home at all
		// (CI: whoami without a home on one of two replicas).
		resolve = m.index.ResolveStored
	}
	info, err := resolve(ctx, string(p))
	if errors.Is(err, workspaces.ErrNotFound) {
		return workspaces.Info{}, errAbsent
	}
	if err != nil {
		return workspaces.Info{}, fmt.Errorf("resolving home workspace %s: %w", p, err)
	}
	if info.Terminating {
		return workspaces.Info{}, fmt.Errorf("home workspace %s is being deleted: %w", p, ErrNoHome)
	}
	if err := m.checkOwner(ctx, store, p, name, patience); err != nil {
		return workspaces.Info{}, err
	}
	return info, nil
}

// Ensure implements Ensurer: it returns u's home, creating it first if
// needed. Concurrent calls for one user share a single creation, which
// runs to completion (bounded) even if the caller that started it goes
// away; each caller waits only as long as its own ctx allows.
func (m *Manager) Ensure(ctx context.Context, u user.Info) (string, string, error) {
	if !IsPerson(u) {
		return "", "", ErrNoHome
	}
	name := u.GetName()
	p := PathOf(name)
	if info, ok := m.cached(p, name); ok {
		return string(info.Path), string(info.ID), nil
	}
	ch := m.flight.DoChan(name, func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.createTimeout)
		defer cancel()
		return m.create(cctx, u, p)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", "", r.Err
		}
		info := r.Val.(workspaces.Info)
		return string(info.Path), string(info.ID), nil
	case <-ctx.Done():
		return "", "", fmt.Errorf("waiting for home workspace %s: %w", p, ctx.Err())
	}
}

// create returns u's home at p, making it if it does not exist, once u
// may access it.
func (m *Manager) create(ctx context.Context, u user.Info, p cluster.Path) (workspaces.Info, error) {
	b := m.bound.Load()
	if b == nil {
		return workspaces.Info{}, errors.New("home workspaces are not ready yet")
	}
	info, err := m.lookup(ctx, b.store, p, u.GetName(), 0)
	created := false
	if errors.Is(err, errAbsent) {
		info, created, err = m.make(ctx, b.store, u, p)
	}
	if err != nil {
		return workspaces.Info{}, err
	}
	switch {
	case created:
		klog.FromContext(ctx).Info("Created home workspace", "user", u.GetName(), "workspace", p, "cluster", info.ID)
	case !m.allowed(ctx, u, info.ID):
		// Initialization is idempotent; running it again repairs a home
		// whose creator failed between storing it and binding the owner,
		// or one that another replica is still initializing.
		if err := b.initialize(ctx, info.ID, u); err != nil {
			return workspaces.Info{}, fmt.Errorf("initializing home workspace %s: %w", p, err)
		}
	}
	if err := m.waitForAccess(ctx, u, info.ID); err != nil {
		return workspaces.Info{}, fmt.Errorf("home workspace %s: %w", p, err)
	}
	m.owners.Store(p, u.GetName())
	return info, nil
}

// make creates the home Workspace through the REST storage, as kubectl
// would. AlreadyExists means another replica won the index transaction;
// the home is then adopted if u owns it.
func (m *Manager) make(ctx context.Context, store Store, u user.Info, p cluster.Path) (workspaces.Info, bool, error) {
	usersID, err := m.ensureUsers(ctx, store)
	if err != nil {
		return workspaces.Info{}, false, err
	}
	_, label, _ := p.Parent()
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{
		Name: label, Annotations: map[string]string{OwnerAnnotation: u.GetName()},
	}}
	// The user is the creator, so the initializer binds them to admin.
	cctx := request.WithUser(inCluster(ctx, usersID), u)
	_, err = store.Create(cctx, ws, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		info, err := m.lookup(ctx, store, p, u.GetName(), m.ownerWait)
		return info, false, err
	}
	if err != nil {
		return workspaces.Info{}, false, fmt.Errorf("creating home workspace %s: %w", p, err)
	}
	info, err := m.index.Resolve(ctx, string(p))
	if err != nil {
		return workspaces.Info{}, false, fmt.Errorf("resolving home workspace %s: %w", p, err)
	}
	return info, true, nil
}

// allowed reports whether the authorizer grants u access to id now.
func (m *Manager) allowed(ctx context.Context, u user.Info, id cluster.ID) bool {
	if m.authz == nil {
		return true
	}
	d, _, _ := m.authz.Authorize(cluster.WithCluster(ctx, id), authorizer.AttributesRecord{User: u, Verb: "access", Path: "/"})
	return d == authorizer.DecisionAllow
}

// waitForAccess polls until the authorizer, whose RBAC cache follows etcd
// through a watch, grants u access to the new home.
func (m *Manager) waitForAccess(ctx context.Context, u user.Info, id cluster.ID) error {
	if m.authz == nil {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, m.accessWait, true, func(ctx context.Context) (bool, error) {
		return m.allowed(ctx, u, id), nil
	})
	if err != nil {
		return fmt.Errorf("owner not granted access in time: %w", err)
	}
	return nil
}

// HomeOrRoot returns the workspace a generated kubeconfig should point
// u at: their home, created now if need be (a token-login exchange is not
// itself an authenticated request, so nothing has created it yet), or root
// for callers without one.
func (m *Manager) HomeOrRoot(ctx context.Context, u user.Info) (string, error) {
	path, _, err := m.Ensure(ctx, u)
	if errors.Is(err, ErrNoHome) {
		return string(cluster.RootPath), nil
	}
	return path, err
}
