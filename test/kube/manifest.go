package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the server-side-apply manager the fixture applies as.
const FieldManager = "wharf-test-fixture"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyYAML server-side-applies every object in a multi-document YAML (or
// JSON) manifest as the admin, CRDs first: it waits for each CRD to be
// Established before applying the rest, so a CRD and its instances can share
// one manifest. Objects without a namespace that need one go to "default".
func (c *Cluster) ApplyYAML(t testing.TB, manifest string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	if err := Apply(ctx, c.Config(), []byte(manifest)); err != nil {
		t.Fatalf("kube fixture: apply: %v", err)
	}
}

// ApplyFile is ApplyYAML for a manifest file.
func (c *Cluster) ApplyFile(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
	c.ApplyYAML(t, string(data))
}

// Apply is the error-returning form of ApplyYAML for any rest config, so it
// also works against servers other than the fixture (e.g. the hub).
func Apply(ctx context.Context, cfg *rest.Config, manifest []byte) error {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	var crds, others []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: crdGVR.Group, Kind: "CustomResourceDefinition"}) {
			crds = append(crds, o)
		} else {
			others = append(others, o)
		}
	}
	for _, o := range crds {
		if err := applyOne(ctx, dyn, crdGVR, false, o); err != nil {
			return err
		}
	}
	for _, o := range crds {
		if err := WaitCRDEstablished(ctx, dyn, o.GetName()); err != nil {
			return err
		}
	}
	if len(crds) > 0 {
		mapper.Reset() // discovery must now include the new kinds
	}
	for _, o := range others {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("map %s %s: %w", gvk, o.GetName(), err)
		}
		namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
		if err := applyOne(ctx, dyn, m.Resource, namespaced, o); err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespaced bool, o *unstructured.Unstructured) error {
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if namespaced {
		if o.GetNamespace() == "" {
			o.SetNamespace(metav1.NamespaceDefault)
		}
		ri = dyn.Resource(gvr).Namespace(o.GetNamespace())
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	force := true
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// WaitCRDEstablished polls the named CRD until its Established condition is
// True or ctx ends.
func WaitCRDEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			last = fmt.Errorf("get crd: %w", err)
		case err != nil:
			last = err
		case conditionTrue(crd, "Established"):
			return nil
		default:
			last = errors.New("not Established yet")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("crd %s: %w (last: %w)", name, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func conditionTrue(o *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// decodeManifest splits a multi-document YAML or JSON stream into objects,
// skipping empty documents.
func decodeManifest(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode manifest document %d: %w", len(objs)+1, err)
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetKind() == "" || o.GetAPIVersion() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("manifest document %d lacks apiVersion, kind or metadata.name", len(objs)+1)
		}
		objs = append(objs, o)
	}
}
