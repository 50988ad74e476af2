package reviews

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// kind says which access review a REST serves.
type kind int

const (
	selfReview kind = iota
	localReview
	clusterReview
)

// AccessREST answers one kind of access review.
type AccessREST struct {
	authz authorizer.UnconditionalAuthorizer
	kind  kind
}

var (
	_ rest.Creater                  = &AccessREST{}
	_ rest.Scoper                   = &AccessREST{}
	_ rest.SingularNameProvider     = &AccessREST{}
	_ rest.GroupVersionKindProvider = &AccessREST{}
)

// NewSelfSubjectAccessReview answers "may I ...?".
func NewSelfSubjectAccessReview(a authorizer.UnconditionalAuthorizer) *AccessREST {
	return &AccessREST{authz: a, kind: selfReview}
}

// NewLocalSubjectAccessReview answers "may this user ... in this namespace?".
func NewLocalSubjectAccessReview(a authorizer.UnconditionalAuthorizer) *AccessREST {
	return &AccessREST{authz: a, kind: localReview}
}

// NewSubjectAccessReview answers "may this user ...?" for privileged callers
// such as providers authorizing a request as its caller.
func NewSubjectAccessReview(a authorizer.UnconditionalAuthorizer) *AccessREST {
	return &AccessREST{authz: a, kind: clusterReview}
}

func (r *AccessREST) New() runtime.Object {
	switch r.kind {
	case selfReview:
		return &authorizationv1.SelfSubjectAccessReview{}
	case localReview:
		return &authorizationv1.LocalSubjectAccessReview{}
	default:
		return &authorizationv1.SubjectAccessReview{}
	}
}

func (r *AccessREST) Destroy() {}

func (r *AccessREST) NamespaceScoped() bool { return r.kind == localReview }

func (r *AccessREST) GetSingularName() string {
	switch r.kind {
	case selfReview:
		return "selfsubjectaccessreview"
	case localReview:
		return "localsubjectaccessreview"
	default:
		return "subjectaccessreview"
	}
}

// GroupVersionKind pins the kind: the internal and v1 types are the same Go
// type here, which would otherwise make the kind ambiguous.
func (r *AccessREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	switch r.kind {
	case selfReview:
		return authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview")
	case localReview:
		return authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview")
	default:
		return authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview")
	}
}

// Create evaluates the review.
func (r *AccessREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	eval := func(a authorizer.Attributes) (authorizer.Decision, string, error) { return r.authz.Authorize(ctx, a) }
	switch review := obj.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		u, ok := request.UserFrom(ctx)
		if !ok {
			return nil, apierrors.NewBadRequest("no user on request")
		}
		attrs, err := specAttributes(u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
		if err != nil {
			return nil, err
		}
		review.Status = decide(attrs, eval)
		return review, nil
	case *authorizationv1.LocalSubjectAccessReview:
		ns, _ := request.NamespaceFrom(ctx)
		if review.Spec.ResourceAttributes == nil || review.Spec.ResourceAttributes.Namespace != ns {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must equal the request namespace %q", ns))
		}
		attrs, err := specAttributes(specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
		if err != nil {
			return nil, err
		}
		review.Status = decide(attrs, eval)
		return review, nil
	case *authorizationv1.SubjectAccessReview:
		if review.Spec.User == "" && len(review.Spec.Groups) == 0 {
			return nil, apierrors.NewBadRequest("at least one of spec.user and spec.groups must be set")
		}
		attrs, err := specAttributes(specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
		if err != nil {
			return nil, err
		}
		review.Status = decide(attrs, eval)
		return review, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("unexpected object %T", obj))
}

func specAttributes(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) (authorizer.AttributesRecord, error) {
	switch {
	case res != nil && nonRes != nil:
		return authorizer.AttributesRecord{}, apierrors.NewBadRequest("resourceAttributes and nonResourceAttributes are exclusive")
	case res != nil:
		return resourceAttributes(u, res), nil
	case nonRes != nil:
		return nonResourceAttributes(u, nonRes), nil
	}
	return authorizer.AttributesRecord{}, apierrors.NewBadRequest("one of resourceAttributes and nonResourceAttributes is required")
}
