package serviceaccounts

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// ReviewGuard keeps TokenReview from being a way around the hub's
// failed-authentication throttle (hub/authn): a review is one guess.
type ReviewGuard interface {
	// Admit returns the error (429) to answer instead of evaluating
	// token, or nil.
	Admit(ctx context.Context, token string) error
	// Failed charges a review whose token was not reported authenticated.
	Failed(ctx context.Context, token string)
}

// MayUse reports whether u may use the workspace of ctx at all (the
// hub's workspace-access check).
type MayUse func(ctx context.Context, u user.Info) (bool, error)

// TokenReviewREST serves authentication.k8s.io/v1 TokenReview (create
// only, cluster-scoped), as upstream: the token is authenticated by the
// hub's bearer-token union and the identity is reported. What the answer
// may reveal is limited to the workspace the review is sent to (see the
// package doc's threat model): a token confined to another workspace,
// and a person who may not use this one, are reported unauthenticated,
// indistinguishable from a wrong token.
type TokenReviewREST struct {
	authn     authenticator.Request
	audiences []string
	mayUse    MayUse
	guard     ReviewGuard
}

var (
	_ rest.Creater                  = &TokenReviewREST{}
	_ rest.Scoper                   = &TokenReviewREST{}
	_ rest.SingularNameProvider     = &TokenReviewREST{}
	_ rest.GroupVersionKindProvider = &TokenReviewREST{}
)

// NewTokenReviewREST reviews tokens with authn, for apiAudiences when a
// review names none. guard may be nil (no throttle).
func NewTokenReviewREST(authn authenticator.Request, apiAudiences []string, mayUse MayUse, guard ReviewGuard) *TokenReviewREST {
	return &TokenReviewREST{authn: authn, audiences: apiAudiences, mayUse: mayUse, guard: guard}
}

func (r *TokenReviewREST) New() runtime.Object { return &authenticationv1.TokenReview{} }

func (r *TokenReviewREST) Destroy() {}

func (r *TokenReviewREST) NamespaceScoped() bool { return false }

func (r *TokenReviewREST) GetSingularName() string { return "tokenreview" }

func (r *TokenReviewREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return authenticationv1.SchemeGroupVersion.WithKind("TokenReview")
}

// errInvalid is the one error text of every review that does not report
// the token authenticated (upstream's text for a token nobody accepted):
// why a token failed, or that it is valid elsewhere, is not the
// reviewer's to know.
var errInvalid = errors.New("invalid bearer token")

// Create reviews the token. A dry run is evaluated and charged exactly as
// a real review (upstream ignores dryRun here, a review stores nothing),
// so it is neither a cheaper guess nor a different answer.
func (r *TokenReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if ns := request.NamespaceValue(ctx); ns != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", ns))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("token review without a workspace"))
	}
	if r.guard != nil {
		if err := r.guard.Admit(ctx, review.Spec.Token); err != nil {
			return nil, err
		}
	}
	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = r.audiences
	}
	resp, ok, err := r.authenticate(ctx, review.Spec.Token, auds)
	if ok && len(authenticator.Audiences(auds).Intersect(resp.Audiences)) == 0 {
		// Upstream's guard against an authenticator ignoring audiences.
		klog.FromContext(ctx).Error(nil, "Token review audiences not honoured", "want", auds, "got", resp.Audiences)
		return nil, apierrors.NewInternalError(errors.New("error validating audience"))
	}
	if ok {
		ok, err = r.visibleHere(ctx, id, resp.User)
	}
	out := review.DeepCopy()
	out.Status = authenticationv1.TokenReviewStatus{}
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Token review not authenticated", "cluster", id, "err", err)
	}
	if !ok {
		// Every guessable token that is not reported authenticated is
		// charged, a valid one confined elsewhere too, so the throttle's
		// answers are no oracle either.
		if r.guard != nil {
			r.guard.Failed(ctx, review.Spec.Token)
		}
		out.Status.Error = errInvalid.Error()
		return out, nil
	}
	u := resp.User
	out.Status.Authenticated = true
	out.Status.Audiences = resp.Audiences
	out.Status.User = authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		out.Status.User.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			out.Status.User.Extra[k] = authenticationv1.ExtraValue(v)
		}
	}
	return out, nil
}

// authenticate runs the token through the union as a request carrying
// nothing but that token, with the target audiences in its context. The
// context is a fresh one: nothing of the reviewer's request (identity,
// workspace) may influence how the token is judged.
func (r *TokenReviewREST) authenticate(ctx context.Context, token string, auds []string) (*authenticator.Response, bool, error) {
	rctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.FromContext(ctx)))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if len(auds) > 0 {
		rctx = authenticator.WithAudiences(rctx, auds)
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, "/", nil)
	if err != nil {
		return nil, false, fmt.Errorf("building review request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, ok, err := r.authn.AuthenticateRequest(req)
	if !ok || resp == nil || resp.User == nil {
		return nil, false, err
	}
	return resp, true, err
}

// visibleHere decides whether the review sent to workspace id may report
// u: an identity confined to a workspace (service-account tokens) only
// in that workspace, anybody else only where they may use the workspace,
// so that a workspace admin learns nothing about the tokens of people
// who have nothing to do with it.
func (r *TokenReviewREST) visibleHere(ctx context.Context, id cluster.ID, u user.Info) (bool, error) {
	if bound, confined := cluster.ConfinedTo(u); confined {
		if bound == "" || bound != id {
			return false, fmt.Errorf("identity confined to %q reviewed in %q", bound, id)
		}
		return true, nil
	}
	if r.mayUse == nil {
		return false, errors.New("no workspace access check")
	}
	ok, err := r.mayUse(ctx, u)
	if err != nil {
		return false, fmt.Errorf("workspace access check: %w", err)
	}
	if !ok {
		return false, fmt.Errorf("%q may not use workspace %q", u.GetName(), id)
	}
	return true, nil
}
