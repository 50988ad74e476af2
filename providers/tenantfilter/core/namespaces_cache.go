package core

import (
	"bytes"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// serveNamespaceListFromCache answers a plain namespace list (JSON or
// protobuf, no Table, no paging, no field selector, no exact
// resourceVersion) from the informer, with no downstream call at all. It
// returns false when the request needs the downstream's own formatting or
// semantics; the caller then lists downstream with the injected selector.
func (c *Core) serveNamespaceListFromCache(w http.ResponseWriter, r *http.Request, caller Caller) bool {
	if c.opts.DisableCaching {
		return false
	}
	q := r.URL.Query()
	for _, p := range []string{"limit", "continue", "fieldSelector", "resourceVersionMatch", "sendInitialEvents"} {
		if q.Get(p) != "" {
			return false
		}
	}
	if rv := q.Get("resourceVersion"); rv != "" && rv != "0" {
		return false
	}
	mediaType, ok := negotiate(r.Header.Get("Accept"))
	if !ok {
		return false
	}
	inf, ok := c.kc.started(namespacesGVR)
	if !ok || !inf.HasSynced() {
		return false
	}
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("unable to parse labelSelector: "+err.Error()))
		return true
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return false
	}
	logProviderRead(r, caller)
	list := &corev1.NamespaceList{}
	list.ResourceVersion = inf.LastSyncResourceVersion()
	for _, name := range c.visibleNames(c.namespaceView(r.Context(), caller)) {
		obj, exists, err := inf.GetStore().GetByKey(name)
		if err != nil || !exists {
			continue
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !sel.Matches(labels.Set(u.GetLabels())) {
			continue
		}
		var ns corev1.Namespace
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ns); err != nil {
			continue
		}
		ns.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, ns)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	if list.Items == nil {
		list.Items = []corev1.Namespace{}
	}
	var buf bytes.Buffer
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	if err := enc.Encode(list, &buf); err != nil {
		writeStatus(w, r, err)
		return true
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return true
}

// negotiate picks the first of JSON or protobuf the Accept header lists;
// anything asking for a transformed answer (as=Table, ...) is left to the
// downstream.
func negotiate(accept string) (string, bool) {
	if accept == "" {
		return runtime.ContentTypeJSON, true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if _, ok := params["as"]; ok {
			return "", false
		}
		switch mt {
		case runtime.ContentTypeJSON, runtime.ContentTypeProtobuf:
			return mt, true
		case "*/*", "application/*":
			return runtime.ContentTypeJSON, true
		}
	}
	return "", false
}
