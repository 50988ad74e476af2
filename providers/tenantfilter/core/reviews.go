package core

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
)

// maxReviewBody bounds the review bodies read here (a review is small; the
// bound keeps a client from making the provider buffer a large body).
const maxReviewBody = 1 << 20

const (
	authorizationGroup = "authorization.k8s.io"
	reviewReason       = "allowed by the tenant filter"
)

// serveAccessReview answers selfsubjectaccessreviews and
// selfsubjectrulesreviews for what the provider grants, so that k9s and
// Headlamp, which ask before they list, show what the filter serves:
//   - an SSAR the provider grants is answered allowed here; any other SSAR
//     goes to the downstream impersonated (its RBAC may allow it natively);
//   - an SSRR is sent to the downstream impersonated and the provider's
//     grants are appended to the rules it returns.
//
// Every other review (subjectaccessreviews, localsubjectaccessreviews, …)
// returns false and is forwarded impersonated by the router.
func (c *Core) serveAccessReview(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	if !info.IsResourceRequest || info.APIGroup != authorizationGroup || info.Verb != "create" || info.Subresource != "" {
		return false
	}
	if info.Resource != "selfsubjectaccessreviews" && info.Resource != "selfsubjectrulesreviews" {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBody+1))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("cannot read the request body"))
		return true
	}
	if len(body) > maxReviewBody {
		writeStatus(w, r, apierrors.NewRequestEntityTooLargeError("the review is too large"))
		return true
	}
	// The body is put back so that a review the provider does not answer
	// reaches the downstream unchanged.
	restore := func() {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	restore()
	obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		// Let the downstream word the error about a malformed review.
		c.forward(w, r, caller)
		return true
	}
	switch review := obj.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		if allowed := c.reviewAllows(r, caller, review.Spec.ResourceAttributes); !allowed {
			c.forward(w, r, caller)
			return true
		}
		klog.V(2).InfoS("tenant filter: access review answered", "user", caller.User, "attributes", review.Spec.ResourceAttributes)
		review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: reviewReason}
		writeReview(w, r, review)
	case *authorizationv1.SelfSubjectRulesReview:
		c.serveRulesReview(w, r, caller, review)
	default:
		c.forward(w, r, caller)
	}
	return true
}

// writeReview answers a review as kube-apiserver does: 201 Created, in the
// media type the client accepts (protobuf or JSON).
func writeReview(w http.ResponseWriter, r *http.Request, obj runtime.Object) {
	mediaType := runtime.ContentTypeJSON
	if strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		mediaType = runtime.ContentTypeProtobuf
	}
	si, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		writeStatus(w, r, fmt.Errorf("no serializer for %s", mediaType))
		return
	}
	enc := clientgoscheme.Codecs.EncoderForVersion(si.Serializer, authorizationv1.SchemeGroupVersion)
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		writeStatus(w, r, err)
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(buf.Bytes())
}
