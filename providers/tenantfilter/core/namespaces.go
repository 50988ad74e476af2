package core

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// metadataNameLabel is set by kube-apiserver on every namespace to its
// name; it cannot be set to anything else, which is what makes selector
// injection on it safe.
const metadataNameLabel = "kubernetes.io/metadata.name"

// noNamespace is a valid label value no namespace name can equal (names are
// DNS labels, without underscores): the selector for "nothing to see".
const noNamespace = "no_visible_namespace"

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// nsView is what one caller may see of namespaces at one moment.
type nsView struct {
	owned map[string]bool // tenants the caller owns
	extra map[string]bool // namespaces granted otherwise (global rules, reflection)
	// global is the caller's GlobalProxySettings grant on namespaces; a
	// named GET also honours entries granting get only.
	global rules.Grant
}

func (c *Core) namespaceView(ctx context.Context, caller Caller) nsView {
	v := nsView{owned: map[string]bool{}, extra: map[string]bool{}}
	for _, t := range c.ownedTenants(caller) {
		v.owned[t] = true
	}
	v.global = c.globalNamespacesGrant(ctx, caller)
	for _, n := range c.globalNamespaces(v.global) {
		v.extra[n] = true
	}
	for _, n := range c.reflectedNamespaces(caller) {
		v.extra[n] = true
	}
	return v
}

// visible decides from a namespace's own metadata, so a namespace just
// created is judged correctly even before the cache has it.
func (v nsView) visible(name string, lbls map[string]string, refs []metav1.OwnerReference) bool {
	if v.extra[name] {
		return true
	}
	t, ok := tenantOf(lbls, refs)
	return ok && v.owned[t]
}

// visibleGet is visible for a named GET: besides what the caller may
// list, a namespace whose own labels match one complete selector of a
// global entry granting get (operations [Get]).
func (v nsView) visibleGet(name string, lbls map[string]string, refs []metav1.OwnerReference) bool {
	return v.visible(name, lbls, refs) || v.global.Permits("get", rules.Object{Name: name, Labels: lbls})
}

// names lists the visible namespaces the cache knows, sorted.
func (c *Core) visibleNames(v nsView) []string {
	set := map[string]bool{}
	for t := range v.owned {
		for _, n := range c.tenancy.TenantNamespaces(t) {
			set[n] = true
		}
	}
	for n := range v.extra {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// serveNamespaces handles the namespaces resource for a filtered caller.
func (c *Core) serveNamespaces(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	switch info.Verb {
	case "list":
		c.listNamespaces(w, r, caller)
		return true
	case "watch":
		c.watchNamespaces(w, r, caller, info)
		return true
	case "get":
		c.getNamespace(w, r, caller, info)
		return true
	case "create":
		if info.Subresource != "" {
			return false
		}
		c.createNamespace(w, r, caller)
		return true
	case "update", "patch", "delete":
		// Only the namespace object itself: its status and finalize
		// subresources are the namespace controller's, and with the
		// provider's credential an owner could finalize a namespace away
		// while its objects stay in storage (they would reappear in the
		// next namespace of that name, whoever creates it).
		if info.Subresource != "" {
			return false
		}
		return c.mutateNamespace(w, r, caller, info)
	}
	return false
}

// injectNameSelector rewrites q's labelSelector to the client's selector
// ANDed with "metadata.name in (names)". The client's selector is parsed
// and re-serialised rather than concatenated, so a malformed one cannot
// swallow the injected requirement.
func injectNameSelector(q url.Values, names []string) error {
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return apierrors.NewBadRequest("unable to parse labelSelector: " + err.Error())
	}
	if len(names) == 0 {
		names = []string{noNamespace}
	}
	req, err := labels.NewRequirement(metadataNameLabel, selection.In, names)
	if err != nil {
		return apierrors.NewBadRequest("cannot build the namespace selector: " + err.Error())
	}
	q.Set("labelSelector", sel.Add(*req).String())
	return nil
}

// listNamespaces answers a plain list from the cache (no downstream call);
// otherwise (Table, paging, ...) with one provider-credential list whose selector
// names exactly the visible namespaces, so the downstream formats the
// answer (Table columns, resourceVersion, paging) exactly as it would.
func (c *Core) listNamespaces(w http.ResponseWriter, r *http.Request, caller Caller) {
	if c.serveNamespaceListFromCache(w, r, caller) {
		return
	}
	q := r.URL.Query()
	if err := injectNameSelector(q, c.visibleNames(c.namespaceView(r.Context(), caller))); err != nil {
		writeStatus(w, r, err)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	c.forwardAsProvider(w, r2, caller)
}

// getNamespace reads the namespace as the provider and answers 404 unless
// the caller may see it. The object itself decides visibility, so a
// namespace created a moment ago is found even if the cache lags.
func (c *Core) getNamespace(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) {
	logProviderRead(r, caller)
	hdr := r.Header.Clone()
	hdr.Set("Accept", jsonAccept(r.Header.Get("Accept")))
	q := r.URL.Query()
	// A Table row without its object cannot be judged; ask for metadata.
	if q.Get("includeObject") == "None" {
		q.Set("includeObject", "Metadata")
	}
	resp, err := c.fwd.do(r.Context(), http.MethodGet, r.URL.Path, q.Encode(), hdr, nil)
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return
	}
	if resp.StatusCode == http.StatusOK {
		m, ok := objectMeta(body)
		if !ok || !c.namespaceView(r.Context(), caller).visibleGet(m.Name, m.Labels, m.OwnerReferences) {
			writeStatus(w, r, apierrors.NewNotFound(namespacesGR, info.Name))
			return
		}
	}
	copyResponse(w, resp, body)
}

// copyResponse writes a buffered downstream response.
func copyResponse(w http.ResponseWriter, resp *http.Response, body []byte) {
	for _, k := range []string{"Content-Type", "Warning", "Cache-Control", "Audit-Id"} {
		for _, v := range resp.Header.Values(k) {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// maxBody bounds what the filter buffers of one object or list.
const maxBody = 256 << 20

// jsonAccept keeps a client's Table or PartialObjectMetadata request but
// asks for JSON, the only encoding the filter inspects.
func jsonAccept(accept string) string {
	switch {
	case strings.Contains(accept, "as=Table"):
		return "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	case strings.Contains(accept, "as=PartialObjectMetadataList"):
		return "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
	case strings.Contains(accept, "as=PartialObjectMetadata"):
		return "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json"
	}
	return "application/json"
}

// objectMeta extracts the metadata of an object, or of the single row of
// a Table (kubectl's get), from JSON.
func objectMeta(raw []byte) (metav1.ObjectMeta, bool) {
	var o struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
		Rows     []struct {
			Object struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return metav1.ObjectMeta{}, false
	}
	if o.Kind == "Table" {
		if len(o.Rows) != 1 || o.Rows[0].Object.Metadata.Name == "" {
			return metav1.ObjectMeta{}, false
		}
		return o.Rows[0].Object.Metadata, true
	}
	return o.Metadata, o.Metadata.Name != ""
}
