// Package crdcleanup replaces the upstream CRD instance cleanup.
//
// Upstream, deleting a CustomResourceDefinition waits for its
// "customresourcecleanup" finalizer, whose controller lists and deletes the
// instances through the custom resource storage with a context that names no
// workspace. Wharf's storage refuses such calls, so upstream cleanup can never
// finish and the CRD would hang in deletion forever. This controller does the
// same job across every workspace: once upstream has marked the CRD
// Terminating (which stops new instances from being created), it removes the
// instances' key range from etcd, then drops the finalizer.
package crdcleanup

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/controller"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Controller purges the instances of deleted CRDs in every workspace.
type Controller struct {
	client     apiextensionsclient.Interface
	etcd       *clientv3.Client
	etcdPrefix string
	// reserved are key prefixes that built-in resources own; a CRD that
	// shadows one must never make us delete them.
	reserved sets.Set[string]

	keyed *controller.Keyed
}

// New returns a controller. builtins lists the group/resource key prefixes
// (storage.ResourcePrefix) of the hub's own resources. Its queue takes
// turns between tenants: a CRD is charged to tenantOf of the workspace it
// is stored in (its cluster annotation).
func New(client apiextensionsclient.Interface, etcd *clientv3.Client, etcdPrefix string, builtins sets.Set[string], tenantOf controller.TenantOfCluster) (*Controller, error) {
	f := apiextensionsinformers.NewSharedInformerFactory(client, 10*time.Minute)
	inf := f.Apiextensions().V1().CustomResourceDefinitions().Informer()
	keyed, err := controller.NewKeyed("crd-instance-cleanup", inf, nil, controller.StoredClusterTenant(inf.GetStore(), tenantOf))
	if err != nil {
		return nil, err
	}
	return &Controller{client: client, etcd: etcd, etcdPrefix: strings.TrimSuffix(etcdPrefix, "/"), reserved: builtins, keyed: keyed}, nil
}

// Run processes CRD deletions until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.keyed.Run(ctx, 1, c.reconcile)
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	obj, exists, err := c.keyed.Informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if crd.DeletionTimestamp == nil || !hasFinalizer(crd) {
		return nil
	}
	// Wait for upstream to mark the CRD Terminating: from then on the
	// custom resource handler refuses new instances, so none can appear
	// behind our purge.
	if !isTerminating(crd) {
		c.keyed.Queue.AddAfter(key, time.Second)
		return nil
	}
	prefix := wstorage.ResourcePrefix(crd.Spec.Group, crd.Spec.Names.Plural)
	if c.reserved.Has(prefix) {
		return fmt.Errorf("CRD %s shadows a built-in resource; refusing to delete its keys", crd.Name)
	}
	resp, err := c.etcd.Delete(ctx, c.etcdPrefix+prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("deleting instances of %s: %w", crd.Name, err)
	}
	klog.InfoS("Deleted custom resources of a deleted CRD in every workspace", "crd", crd.Name, "keys", resp.Deleted)

	return c.dropFinalizer(ctx, crd.Name)
}

func (c *Controller) dropFinalizer(ctx context.Context, name string) error {
	for i := 0; i < 5; i++ {
		crd, err := c.client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		var kept []string
		for _, f := range crd.Finalizers {
			if f != apiextensionsv1.CustomResourceCleanupFinalizer {
				kept = append(kept, f)
			}
		}
		crd.Finalizers = kept
		// Upstream's finalizer controller also writes this object (it
		// records its failed attempts), so conflicts are expected.
		_, err = c.client.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("dropping finalizer of %s: too many conflicts", name)
}

func hasFinalizer(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, f := range crd.Finalizers {
		if f == apiextensionsv1.CustomResourceCleanupFinalizer {
			return true
		}
	}
	return false
}

func isTerminating(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
