package apiview

import (
	"mime"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// discoveryCodecs decode and re-encode what upstream's discovery handlers
// wrote: the legacy APIGroupList and the aggregated APIGroupDiscoveryList
// (v2 and v2beta1), in JSON or protobuf.
var discoveryCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	utilruntime.Must(apidiscoveryv2.AddToScheme(s))
	utilruntime.Must(apidiscoveryv2beta1.AddToScheme(s))
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{}, &metav1.Status{})
	return serializer.NewCodecFactory(s)
}()

// WithDiscovery narrows discovery to the view of the request's workspace:
// /apis (legacy and aggregated) lists only visible groups, and /apis/<g>
// and /apis/<g>/<v> of a hidden group answer as for a group that does not
// exist. /api is the core group, which is always visible. It must run
// after workspace resolution (the cluster is in the context).
func (v *View) WithDiscovery(delegate http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			delegate.ServeHTTP(w, r)
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if parts[0] != "apis" || len(parts) > 3 {
			delegate.ServeHTTP(w, r)
			return
		}
		if len(parts) > 1 {
			// A workspace's APIService wins over a hub-wide CRD of the same
			// group version, in that workspace only (hub/aggregation).
			if v.serveAggregated(w, r, parts, delegate) {
				return
			}
			if !v.Visible(r.Context(), parts[1]) {
				// What kube-apiserver's last delegate answers for a group
				// nobody serves.
				http.NotFound(w, r)
				return
			}
			delegate.ServeHTTP(w, r)
			return
		}
		v.serveGroups(w, r, delegate)
	})
}

// serveGroups lets upstream answer /apis in whatever form the client
// negotiated, then drops the hidden groups from it.
func (v *View) serveGroups(w http.ResponseWriter, r *http.Request, delegate http.Handler) {
	c := internalGet(delegate, r, "")
	passThrough := func() { writeWithETag(w, r, c, c.body.Bytes()) }
	if c.code != http.StatusOK {
		passThrough()
		return
	}
	mediaType, _, err := mime.ParseMediaType(c.header.Get("Content-Type"))
	if err != nil {
		passThrough()
		return
	}
	info, ok := runtime.SerializerInfoForMediaType(discoveryCodecs.SupportedMediaTypes(), mediaType)
	if !ok {
		passThrough()
		return
	}
	// Unversioned lists may come without apiVersion; they are v1.
	obj, gvk, err := info.Serializer.Decode(c.body.Bytes(), &schema.GroupVersionKind{Version: "v1"}, nil)
	if err != nil {
		klog.V(2).InfoS("Discovery document not understood, passed on unfiltered", "contentType", mediaType, "err", err)
		passThrough()
		return
	}
	changed := v.filter(r, obj)
	if v.merge(r, obj) {
		changed = true
	}
	if !changed {
		passThrough()
		return
	}
	body, err := runtime.Encode(discoveryCodecs.EncoderForVersion(info.Serializer, gvk.GroupVersion()), obj)
	if err != nil {
		klog.ErrorS(err, "Encoding filtered discovery")
		http.Error(w, "encoding discovery failed", http.StatusInternalServerError)
		return
	}
	writeWithETag(w, r, c, body)
}

// keepNamed filters items in place, keeping those whose name keep accepts.
func keepNamed[T any](items []T, name func(T) string, keep func(string) bool) []T {
	out := items[:0]
	for _, it := range items {
		if keep(name(it)) {
			out = append(out, it)
		}
	}
	return out
}

// filter drops hidden groups from a discovery document in place and
// reports whether it dropped any.
func (v *View) filter(r *http.Request, obj runtime.Object) bool {
	ctx := r.Context()
	dropped := false
	keep := func(name string) bool {
		ok := v.Visible(ctx, name)
		dropped = dropped || !ok
		return ok
	}
	switch l := obj.(type) {
	case *metav1.APIGroupList:
		l.Groups = keepNamed(l.Groups, func(g metav1.APIGroup) string { return g.Name }, keep)
	case *apidiscoveryv2.APIGroupDiscoveryList:
		l.Items = keepNamed(l.Items, func(g apidiscoveryv2.APIGroupDiscovery) string { return g.Name }, keep)
	case *apidiscoveryv2beta1.APIGroupDiscoveryList:
		l.Items = keepNamed(l.Items, func(g apidiscoveryv2beta1.APIGroupDiscovery) string { return g.Name }, keep)
	}
	return dropped
}
