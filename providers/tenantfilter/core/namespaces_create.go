package core

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// createNamespace creates a namespace in a tenant the caller owns, with the
// provider's credential, labelled with both tenant labels and owned by the
// Tenant. The tenant is chosen as Capsule does: the capsule.clastix.io/tenant
// label the client set, else the only tenant the caller owns; owning several
// without saying which is a 400. Anything else is a 403 and nothing is sent.
func (c *Core) createNamespace(w http.ResponseWriter, r *http.Request, caller Caller) {
	obj, err := readObject(r)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	lbls := obj.GetLabels()
	want := lbls[capsulev1beta2.TenantLabel]
	if p := lbls[capsulev1beta2.ProjectTenantLabel]; p != "" {
		if want != "" && want != p {
			writeStatus(w, r, apierrors.NewBadRequest("the labels "+capsulev1beta2.TenantLabel+" and "+capsulev1beta2.ProjectTenantLabel+" name different tenants"))
			return
		}
		want = p
	}
	owned := c.ownedTenants(caller)
	deny := forbidden(caller.User, "create", "", "namespaces", "", "")
	switch {
	case want != "" && !contains(owned, want):
		writeStatus(w, r, deny)
		return
	case want == "" && len(owned) == 0:
		writeStatus(w, r, deny)
		return
	case want == "" && len(owned) > 1:
		writeStatus(w, r, apierrors.NewBadRequest("you own several tenants: label the namespace with "+capsulev1beta2.TenantLabel+"=<tenant> to choose one"))
		return
	case want == "":
		want = owned[0]
	}
	tn, ok := c.tn.tenant(want)
	if !ok {
		writeStatus(w, r, deny)
		return
	}
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[capsulev1beta2.TenantLabel] = want
	lbls[capsulev1beta2.ProjectTenantLabel] = want
	obj.SetLabels(lbls)
	// A client-set reference to a Tenant would decide membership (it wins
	// over the labels); only ours stays.
	var refs []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind != "Tenant" {
			refs = append(refs, ref)
		}
	}
	yes := true
	refs = append(refs, metav1.OwnerReference{
		APIVersion: capsulev1beta2.SchemeGroupVersion.String(), Kind: "Tenant",
		Name: tn.Name, UID: tn.UID, Controller: &yes, BlockOwnerDeletion: &yes,
	})
	obj.SetOwnerReferences(refs)
	body, err := json.Marshal(obj.Object)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	logProviderRead(r, caller)
	hdr := http.Header{"Content-Type": []string{"application/json"}, "Accept": []string{jsonAccept(r.Header.Get("Accept"))}}
	resp, err := c.fwd.do(r.Context(), http.MethodPost, r.URL.Path, r.URL.RawQuery, hdr, bytes.NewReader(body))
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return
	}
	if resp.StatusCode == http.StatusCreated && !isDryRun(r.URL.Query()) {
		if m, ok := objectMeta(out); ok {
			c.waitForNamespace(r.Context(), m.Name)
		}
	}
	copyResponse(w, resp, out)
}

// waitForNamespace lets the cache catch up with a namespace just created,
// so that the caller's next list (kubectl create then get) includes it.
func (c *Core) waitForNamespace(ctx context.Context, name string) {
	inf, ok := c.kc.started(namespacesGVR)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		_, exists, _ := inf.GetStore().GetByKey(name)
		return exists, nil
	})
}

func isDryRun(q url.Values) bool { return len(q["dryRun"]) > 0 }

// readObject decodes a request body in any encoding kube-apiserver accepts
// for built-in kinds (JSON, YAML, protobuf: client-go sends protobuf).
func readObject(r *http.Request) (*unstructured.Unstructured, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		return nil, apierrors.NewBadRequest("cannot read the request body")
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "", "application/json", "application/yaml", runtime.ContentTypeProtobuf:
	default:
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
			Reason:  metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"}}
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest("the request body is not a valid object: " + err.Error())
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest("the request body is not a valid object")
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" {
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
	}
	if u.GetKind() != "Namespace" {
		return nil, apierrors.NewBadRequest("the request body is not a Namespace")
	}
	return u, nil
}

// mutateNamespace serves update, patch and delete of a namespace in a
// tenant the caller owns with the provider's credential; a namespace of any
// other tenant (or none) goes to the downstream impersonated (returns
// false). An update or patch must leave the namespace in the same tenant:
// it is tried as a server-side dry run first and refused otherwise, so
// nobody can move a namespace into someone else's tenant.
func (c *Core) mutateNamespace(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	tenant, ok := c.tenancy.NamespaceTenant(info.Name)
	if !ok || !contains(c.ownedTenants(caller), tenant) {
		return false
	}
	if info.Verb == "delete" {
		c.forwardAsProvider(w, r, caller)
		return true
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("cannot read the request body"))
		return true
	}
	q := r.URL.Query()
	q.Set("dryRun", "All")
	hdr := http.Header{"Content-Type": []string{r.Header.Get("Content-Type")}, "Accept": []string{"application/json"}}
	resp, err := c.fwd.do(r.Context(), r.Method, r.URL.Path, q.Encode(), hdr, bytes.NewReader(raw))
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return true
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return true
	}
	if resp.StatusCode != http.StatusOK {
		copyResponse(w, resp, out)
		return true
	}
	if m, ok := objectMeta(out); !ok {
		writeStatus(w, r, apierrors.NewInternalError(errUndecodable))
		return true
	} else if t, ok := tenantOf(m.Labels, m.OwnerReferences); !ok || t != tenant || !onlyTenant(m, tenant) {
		writeStatus(w, r, forbidden(caller.User, info.Verb, "", "namespaces", "", info.Name))
		return true
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(raw))
	r2.ContentLength = int64(len(raw))
	c.forwardAsProvider(w, r2, caller)
	return true
}

// onlyTenant: nothing on the namespace names another tenant. tenantOf
// reads the first link it finds, but other readers (Capsule, network
// policies selecting projectcapsule.dev/tenant) may read another, so an
// owner must not add a second label or reference naming someone else's
// tenant to a namespace that stays theirs.
func onlyTenant(m metav1.ObjectMeta, tenant string) bool {
	for _, k := range []string{capsulev1beta2.TenantLabel, capsulev1beta2.ProjectTenantLabel} {
		if v, ok := m.Labels[k]; ok && v != tenant {
			return false
		}
	}
	for _, r := range m.OwnerReferences {
		if r.Kind == "Tenant" && r.Name != tenant {
			return false
		}
	}
	return true
}
