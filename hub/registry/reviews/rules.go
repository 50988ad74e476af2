package reviews

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
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

// RulesREST answers SelfSubjectRulesReview (kubectl auth can-i --list).
type RulesREST struct {
	resolver authorizer.RuleResolver
}

var (
	_ rest.Creater                  = &RulesREST{}
	_ rest.SingularNameProvider     = &RulesREST{}
	_ rest.GroupVersionKindProvider = &RulesREST{}
)

// NewSelfSubjectRulesReview returns the rules-review storage.
func NewSelfSubjectRulesReview(r authorizer.RuleResolver) *RulesREST { return &RulesREST{resolver: r} }

func (r *RulesREST) New() runtime.Object     { return &authorizationv1.SelfSubjectRulesReview{} }
func (r *RulesREST) Destroy()                {}
func (r *RulesREST) NamespaceScoped() bool   { return false }
func (r *RulesREST) GetSingularName() string { return "selfsubjectrulesreview" }
func (r *RulesREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview")
}

// Create lists what the caller may do in a namespace of this workspace.
func (r *RulesREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", obj))
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user on request")
	}
	if review.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("spec.namespace is required")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	res, nonRes, incomplete, err := r.resolver.RulesFor(ctx, u, review.Spec.Namespace)
	review.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete}
	for _, ri := range res {
		review.Status.ResourceRules = append(review.Status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: ri.GetVerbs(), APIGroups: ri.GetAPIGroups(), Resources: ri.GetResources(), ResourceNames: ri.GetResourceNames(),
		})
	}
	for _, ni := range nonRes {
		review.Status.NonResourceRules = append(review.Status.NonResourceRules, authorizationv1.NonResourceRule{
			Verbs: ni.GetVerbs(), NonResourceURLs: ni.GetNonResourceURLs(),
		})
	}
	if err != nil {
		review.Status.EvaluationError = err.Error()
	}
	return review, nil
}

// Extra keys SelfSubjectReview adds to status.userInfo.extra.
const (
	HomeWorkspaceExtra = "wharf.dev/home-workspace"
	HomeClusterExtra   = "wharf.dev/home-cluster"
)

// WhoAmIREST answers SelfSubjectReview (kubectl auth whoami).
type WhoAmIREST struct {
	// Home, when set, returns the caller's home workspace path and logical
	// cluster id (hub/home); ok is false for callers without one.
	Home func(ctx context.Context, u user.Info) (path, clusterID string, ok bool)
}

var (
	_ rest.Creater                  = &WhoAmIREST{}
	_ rest.SingularNameProvider     = &WhoAmIREST{}
	_ rest.GroupVersionKindProvider = &WhoAmIREST{}
)

func (WhoAmIREST) New() runtime.Object     { return &authenticationv1.SelfSubjectReview{} }
func (WhoAmIREST) Destroy()                {}
func (WhoAmIREST) NamespaceScoped() bool   { return false }
func (WhoAmIREST) GetSingularName() string { return "selfsubjectreview" }
func (WhoAmIREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview")
}

// Create reports the caller's authenticated identity.
func (w WhoAmIREST) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user on request")
	}
	extra := map[string]authenticationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	// Only the hub speaks for these keys, whatever an authenticator set.
	delete(extra, HomeWorkspaceExtra)
	delete(extra, HomeClusterExtra)
	if w.Home != nil {
		if path, id, ok := w.Home(ctx, u); ok {
			extra[HomeWorkspaceExtra] = authenticationv1.ExtraValue{path}
			extra[HomeClusterExtra] = authenticationv1.ExtraValue{id}
		}
	}
	return &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
		UserInfo: authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra},
	}}, nil
}
