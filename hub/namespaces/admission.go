package namespaces

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/cluster"
)

// PluginName is the admission plugin's name.
const PluginName = "WharfNamespaceLifecycle"

// ContentFinalizer is the metadata finalizer by which earlier hubs held a
// deleted namespace until its content was gone. Namespaces now use
// spec.finalizers "kubernetes", as upstream; a stored namespace that still
// carries ContentFinalizer is migrated by its next write (hub/registry) and
// finalized by the controller alike.
const ContentFinalizer = "wharf.dev/namespace-content"

// Immortal namespaces exist in every workspace and cannot be deleted.
var Immortal = sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem)

// Lifecycle is the cluster-aware namespace lifecycle admission plugin.
type Lifecycle struct {
	*admission.Handler
	// namespaces is set once the Namespace storage exists, which is after
	// the admission chain is configured.
	namespaces atomic.Pointer[rest.Getter]
}

var (
	_ admission.MutationInterface   = &Lifecycle{}
	_ admission.ValidationInterface = &Lifecycle{}
)

// NewLifecycle returns the plugin. It refuses every create until
// SetNamespaces has been called.
func NewLifecycle() *Lifecycle {
	return &Lifecycle{Handler: admission.NewHandler(admission.Create, admission.Delete)}
}

// SetNamespaces hands the plugin the Namespace storage.
func (l *Lifecycle) SetNamespaces(g rest.Getter) { l.namespaces.Store(&g) }

// Validate rejects creating namespaced objects in missing or terminating
// namespaces, and deleting the immortal namespaces.
func (l *Lifecycle) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if a.GetOperation() == admission.Delete {
		if gr != corev1.Resource("namespaces") {
			return nil
		}
		if name := deletedName(a); Immortal.Has(name) {
			return admission.NewForbidden(a, fmt.Errorf("namespace %s cannot be deleted", name))
		}
		return nil
	}
	return l.checkCreate(ctx, a)
}

// Admit refuses creates in missing or terminating namespaces before the
// storage sees the object, as upstream's plugin does (it is a mutating
// one): the answer names the object as the client sent it, generateName
// prefix and all. Validate repeats the check inside the storage.
func (l *Lifecycle) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	return l.checkCreate(ctx, a)
}

func (l *Lifecycle) checkCreate(ctx context.Context, a admission.Attributes) error {
	gr := a.GetResource().GroupResource()
	// Cluster-scoped objects (the namespace itself among them) have no
	// namespace to check; neither do the review subresources.
	if a.GetNamespace() == "" || gr == corev1.Resource("namespaces") {
		return nil
	}
	if _, ok := cluster.From(ctx); !ok {
		return admission.NewForbidden(a, fmt.Errorf("no workspace in request"))
	}
	ns, err := l.get(ctx, a.GetNamespace())
	if apierrors.IsNotFound(err) {
		// As upstream: the namespace's own NotFound, not a Forbidden.
		return apierrors.NewNotFound(corev1.Resource("namespaces"), a.GetNamespace())
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("looking up namespace %s: %w", a.GetNamespace(), err))
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return terminating(a)
	}
	return nil
}

// terminating is upstream's refusal of new content in a namespace being
// deleted: 403 naming the object, with the NamespaceTerminating cause that
// clients (and controllers) look for.
func terminating(a admission.Attributes) error {
	msg := fmt.Sprintf("unable to create new content in namespace %s because it is being terminated", a.GetNamespace())
	err := admission.NewForbidden(a, errors.New(msg))
	if se, ok := err.(*apierrors.StatusError); ok && se.ErrStatus.Details != nil {
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: msg, Field: "metadata.namespace",
		})
	}
	return err
}

// deletedName names the namespace a delete removes. A collection delete
// validates each item with the attributes of the collection request, whose
// name is empty, so the name comes from the stored object first. The
// namespace storage serves no deletecollection (as upstream); this keeps
// the rule whole should any other collection path reach it.
func deletedName(a admission.Attributes) string {
	if ns, ok := a.GetOldObject().(*corev1.Namespace); ok && ns.Name != "" {
		return ns.Name
	}
	return a.GetName()
}

// get reads the namespace from the watch cache, and on a miss from etcd: a
// namespace created a moment ago may not have reached the cache yet.
func (l *Lifecycle) get(ctx context.Context, name string) (*corev1.Namespace, error) {
	gp := l.namespaces.Load()
	if gp == nil {
		return nil, fmt.Errorf("namespace storage not ready")
	}
	g := *gp
	ctx = request.WithNamespace(ctx, metav1.NamespaceNone)
	obj, err := g.Get(ctx, name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		obj, err = g.Get(ctx, name, &metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", obj)
	}
	return ns, nil
}

// CreateImmortal creates the namespaces every workspace has. ctx must
// address the workspace's logical cluster.
func CreateImmortal(ctx context.Context, c rest.Creater) error {
	ctx = request.WithNamespace(ctx, metav1.NamespaceNone)
	for _, name := range sets.List(Immortal) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := c.Create(ctx, ns, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}
