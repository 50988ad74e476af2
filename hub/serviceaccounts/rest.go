package serviceaccounts

import (
	"context"
	"fmt"
	"math"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/utils/ptr"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TokenREST serves serviceaccounts/token: POST a TokenRequest, get a
// token for that ServiceAccount of the request's workspace.
type TokenREST struct {
	serviceAccounts rest.Getter
	secrets         rest.Getter
	tokens          *Tokens
	maxExpiration   time.Duration
	// minted is told every token minted (WithMinted).
	minted func(token string)
}

var (
	_ rest.NamedCreater             = &TokenREST{}
	_ rest.GroupVersionKindProvider = &TokenREST{}
)

// NewTokenREST mints tokens of t for ServiceAccounts read from sas;
// requested lifetimes above maxExpiration are cut to it (0: the default).
func NewTokenREST(sas rest.Getter, t *Tokens, maxExpiration time.Duration) *TokenREST {
	if maxExpiration <= 0 {
		maxExpiration = DefaultMaxExpiration
	}
	return &TokenREST{serviceAccounts: sas, tokens: t, maxExpiration: maxExpiration}
}

// WithSecrets lets tokens be bound to Secrets read from secrets
// (boundObjectRef kind Secret); without it such requests are refused as
// an unsupported kind.
func (r *TokenREST) WithSecrets(secrets rest.Getter) *TokenREST {
	r.secrets = secrets
	return r
}

// WithMinted has minted told every token this REST mints: the
// failed-authentication throttle knows the hub's own tokens good, so that
// a fresh token works even from an address over its failure budget.
func (r *TokenREST) WithMinted(minted func(token string)) *TokenREST {
	r.minted = minted
	return r
}

func (r *TokenREST) New() runtime.Object { return &authenticationv1.TokenRequest{} }

func (r *TokenREST) Destroy() {}

// GroupVersionKind says the subresource of core/v1 ServiceAccount speaks
// authentication.k8s.io/v1 TokenRequest, as upstream.
func (r *TokenREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
}

var tokenRequestKind = schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}

// Create mints a token for the ServiceAccount name in the request's
// namespace and workspace. A dry run answers exactly as a real request
// would, errors included, but mints nothing: a dry run must have no
// effect, and a signed token is a credential (upstream signs one anyway).
func (r *TokenREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("token request without a workspace"))
	}
	ns, _ := request.NamespaceFrom(ctx)
	ttl, errs := r.validate(req)
	// As upstream: the body may name the ServiceAccount, but only the
	// one of the URL.
	if req.Name != "" && req.Name != name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified"))
	}
	if req.Namespace != "" && req.Namespace != ns {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestKind, name, errs)
	}
	got, err := r.serviceAccounts.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sa, ok := got.(*corev1.ServiceAccount)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("service account storage returned %T", got))
	}
	if sa.DeletionTimestamp != nil {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts/token"}, name, fmt.Errorf("service account is being deleted"))
	}
	secret, err := r.boundSecret(ctx, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, err
	}
	out := req.DeepCopy()
	out.ObjectMeta = metav1.ObjectMeta{Name: sa.Name, Namespace: ns, CreationTimestamp: metav1.Now()}
	out.Spec.ExpirationSeconds = ptr.To(int64(ttl / time.Second))
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = r.tokens.APIAudiences()[:1]
	}
	if options != nil && dryrun.IsDryRun(options.DryRun) {
		return out, nil
	}
	tok, exp, err := r.tokens.MintBound(Subject{Cluster: id, Namespace: ns, Name: sa.Name, UID: sa.UID}, secret, req.Spec.Audiences, ttl)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if r.minted != nil {
		r.minted(tok)
	}
	out.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(exp)}
	return out, nil
}

// validate applies upstream's rules: default an hour, at least ten
// minutes, at most 2^32 seconds, then cut to the configured maximum.
func (r *TokenREST) validate(req *authenticationv1.TokenRequest) (time.Duration, field.ErrorList) {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ttl := DefaultExpiration
	if s := req.Spec.ExpirationSeconds; s != nil {
		switch {
		case *s < int64(MinExpiration/time.Second):
			errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 10 minutes"))
		case *s > math.MaxUint32:
			errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration larger than 2^32 seconds"))
		default:
			ttl = time.Duration(*s) * time.Second
		}
	}
	if ttl > r.maxExpiration {
		ttl = r.maxExpiration
	}
	for i, a := range req.Spec.Audiences {
		if a == "" {
			errs = append(errs, field.Invalid(spec.Child("audiences").Index(i), a, "must not be empty"))
		}
	}
	return ttl, errs
}

// boundSecret resolves boundObjectRef as upstream: only core/v1 kinds are
// known, and of those the hub serves Secrets alone. Pods and Nodes do not
// exist on the hub, so a reference to one is refused with upstream's
// message for a kind it cannot bind to (upstream would look the object
// up and answer 404 here). A uid in the reference must be the Secret's.
func (r *TokenREST) boundSecret(ctx context.Context, ref *authenticationv1.BoundObjectReference) (*BoundObject, error) {
	if ref == nil {
		return nil, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if gvk.Group != "" || gvk.Kind != "Secret" || r.secrets == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	// As upstream, the lookup is a request for the Secret: errors name
	// secrets, not serviceaccounts.
	sctx := ctx
	if info, ok := request.RequestInfoFrom(ctx); ok {
		c := *info
		c.Resource, c.Subresource, c.Name, c.Verb = "secrets", "", ref.Name, "get"
		sctx = request.WithRequestInfo(ctx, &c)
	}
	obj, err := r.secrets.Get(sctx, ref.Name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("secret storage returned %T", obj))
	}
	if ref.UID != "" && ref.UID != s.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return &BoundObject{Name: s.Name, UID: s.UID}, nil
}
