package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/plugins"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// Host is the part of plugins.Host the syncer reads.
type Host interface {
	List() []plugins.Status
	Subscribe(ctx context.Context) <-chan struct{}
}

// Timings of the syncer.
const (
	// Heartbeat is how often a replica refreshes its element unchanged.
	Heartbeat = 20 * time.Second
	// Stale is when other replicas drop an element that was not refreshed.
	Stale = time.Minute
	// retryAfter paces retries of a failed write or CRD install.
	retryAfter = 2 * time.Second
)

// Syncer reflects this hub replica's plugin host into CatalogEntries.
type Syncer struct {
	host    Host
	storage *Storage
	crds    apiextensionsclient.CustomResourceDefinitionInterface
	replica string
	now     func() time.Time

	// installed remembers the descriptor whose CRDs were installed, per
	// provider: the host replaces the descriptor on every (re)start.
	installed map[string]*plugin.Descriptor
	// installErr is the latest CRD install failure, reported as lastError.
	installErr map[string]error
	// written is when this replica last wrote its element, per provider.
	written map[string]time.Time
}

// NewSyncer returns a syncer for one hub replica.
func NewSyncer(host Host, s *Storage, crds apiextensionsclient.CustomResourceDefinitionInterface, replica string) *Syncer {
	return &Syncer{host: host, storage: s, crds: crds, replica: replica, now: time.Now,
		installed: map[string]*plugin.Descriptor{}, installErr: map[string]error{}, written: map[string]time.Time{}}
}

// Run syncs on every host change and every heartbeat until ctx is done.
func (s *Syncer) Run(ctx context.Context) {
	changed := s.host.Subscribe(ctx)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changed:
			if !ok {
				return
			}
		case <-t.C:
		}
		next := Heartbeat / 2
		if err := s.syncAll(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			klog.FromContext(ctx).Error(err, "Syncing the provider catalog; retrying")
			next = retryAfter
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

func (s *Syncer) syncAll(ctx context.Context) error {
	var errs []error
	local := map[string]bool{}
	for _, st := range s.host.List() {
		local[st.Name] = true
		if err := s.sync(ctx, st); err != nil {
			errs = append(errs, fmt.Errorf("provider %s: %w", st.Name, err))
		}
	}
	if err := s.forgetOthers(ctx, local); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// forgetOthers keeps entries of providers this replica does not run (no
// longer configured, or configured on other replicas only) truthful: it
// drops this replica's element and stale ones. An entry no replica reports
// on any more stays, not Ready: its CRDs and their objects outlive the
// plugin, and the entry is what keeps its API groups behind
// ProviderBindings (hub/enablement). An administrator deletes it to retire
// the provider for good.
func (s *Syncer) forgetOthers(ctx context.Context, local map[string]bool) error {
	rctx := s.rootContext(ctx)
	obj, err := s.storage.Entries.List(rctx, nil)
	if err != nil {
		return fmt.Errorf("listing catalog entries: %w", err)
	}
	var errs []error
	now := s.now()
	for i := range obj.(*providersv1alpha1.CatalogEntryList).Items {
		e := &obj.(*providersv1alpha1.CatalogEntryList).Items[i]
		if local[e.Name] {
			continue
		}
		want := withoutReplica(e.Name, e.Spec, e.Status, e.Generation, s.replica, now, Stale)
		if len(want.Replicas) == len(e.Status.Replicas) {
			continue // nothing of ours, nothing stale
		}
		// Guarded by resourceVersion: a replica that just reported wins.
		cp := e.DeepCopy()
		cp.Status = want
		_, _, err = s.storage.EntriesStatus.Update(rctx, e.Name, rest.DefaultUpdatedObjectInfo(cp), rest.ValidateAllObjectFunc,
			rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("provider %s: %w", e.Name, err))
		}
	}
	return errors.Join(errs...)
}

// rootContext is how the hub itself writes to root.
func (s *Syncer) rootContext(ctx context.Context) context.Context {
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: "system:wharf:catalog", Groups: []string{user.SystemPrivilegedGroup}})
	return request.WithNamespace(cluster.WithCluster(ctx, s.storage.Entries.Root()), metav1.NamespaceNone)
}

func (s *Syncer) sync(ctx context.Context, st plugins.Status) error {
	var spec *providersv1alpha1.CatalogEntrySpec
	var crds []*apiextensionsv1.CustomResourceDefinition
	var decodeErr error
	if d := st.Descriptor; d != nil {
		crds, decodeErr = decodeCRDs(d)
		sp := specOf(d, crds)
		spec = &sp
	}
	now := s.now()
	self := replicaOf(s.replica, st, now)
	if self.LastError == "" && s.installErr[st.Name] != nil {
		self.LastError = s.installErr[st.Name].Error()
	}
	// The entry (which names the provider's API groups) is written before
	// the CRDs exist, so enablement knows a group is the provider's before
	// any workspace could use it.
	force := now.Sub(s.written[st.Name]) >= Heartbeat
	wrote, err := s.write(s.rootContext(ctx), st.Name, spec, self, now, force)
	if err != nil {
		return err
	}
	if wrote {
		s.written[st.Name] = now
	}
	d := st.Descriptor
	if d == nil || s.installed[st.Name] == d {
		return nil
	}
	err = decodeErr
	if err == nil {
		err = installCRDs(ctx, s.crds, st.Name, crds)
	}
	if err != nil {
		s.installErr[st.Name] = err
		return err
	}
	delete(s.installErr, st.Name)
	s.installed[st.Name] = d
	return nil
}

// write read-modify-writes the entry: spec (when this replica knows the
// manifest) on the main resource, its own element and the aggregate on the
// status subresource, each guarded by resourceVersion.
func (s *Syncer) write(ctx context.Context, name string, spec *providersv1alpha1.CatalogEntrySpec, self providersv1alpha1.ReplicaStatus,
	now time.Time, force bool) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := s.storage.Entries.Get(ctx, name, &metav1.GetOptions{})
		created := false
		if apierrors.IsNotFound(err) {
			// Create starts an entry without status (the strategy clears
			// it, whoever creates); the status write below adds ours.
			e := &providersv1alpha1.CatalogEntry{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if spec != nil {
				e.Spec = *spec
			}
			obj, err = s.storage.Entries.Create(ctx, e, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(providersv1alpha1.Resource("catalogentries"), name, err)
			}
			wrote, created = err == nil, true
		}
		if err != nil {
			return err
		}
		e := obj.(*providersv1alpha1.CatalogEntry).DeepCopy()
		if !created && spec != nil && !apiequality.Semantic.DeepEqual(e.Spec, *spec) {
			e.Spec = *spec
			out, _, err := s.storage.Entries.Update(ctx, name, rest.DefaultUpdatedObjectInfo(e), rest.ValidateAllObjectFunc,
				rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			e = out.(*providersv1alpha1.CatalogEntry).DeepCopy()
			wrote = true
		}
		want := aggregate(name, e.Spec, e.Status, e.Generation, self, now, Stale)
		if !force && !created && sameIgnoringHeartbeat(e.Status, want, self.Name) {
			return nil
		}
		e.Status = want
		_, _, err = s.storage.EntriesStatus.Update(ctx, name, rest.DefaultUpdatedObjectInfo(e), rest.ValidateAllObjectFunc,
			rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		wrote = wrote || err == nil
		return err
	})
	return wrote, err
}

// sameIgnoringHeartbeat compares two statuses, treating this replica's
// heartbeat as equal: a refresh alone waits for the next heartbeat.
func sameIgnoringHeartbeat(a, b providersv1alpha1.CatalogEntryStatus, self string) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	for _, st := range []*providersv1alpha1.CatalogEntryStatus{&a, &b} {
		for i := range st.Replicas {
			if st.Replicas[i].Name == self {
				st.Replicas[i].HeartbeatTime = metav1.Time{}
			}
		}
	}
	return apiequality.Semantic.DeepEqual(a, b)
}
