package serviceaccounts

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/cluster"
)

const (
	// ExtraCluster is the user-info extra key naming the logical cluster a
	// service-account identity is bound to. Binding enforces it.
	ExtraCluster = cluster.ConfinedExtra
	// extraCredentialID is upstream's audit key for the token id.
	extraCredentialID = "authentication.kubernetes.io/credential-id"
	// ClusterGroupPrefix + cluster id is the group naming the workspace.
	ClusterGroupPrefix = "system:cluster:"
)

// Authenticator is the service-account slot of hub/authn's union. The
// ServiceAccount storage exists only once the API is built, after the
// authenticator: until SetStore is called every token is refused.
type Authenticator struct {
	tokens  *Tokens
	store   atomic.Pointer[rest.Getter]
	secrets atomic.Pointer[rest.Getter]
}

var _ authenticator.Token = &Authenticator{}

// NewAuthenticator verifies tokens of t.
func NewAuthenticator(t *Tokens) *Authenticator { return &Authenticator{tokens: t} }

// SetStore hands the authenticator the ServiceAccount storage (cluster
// aware: Get needs cluster.WithCluster in its context).
func (a *Authenticator) SetStore(s rest.Getter) { a.store.Store(&s) }

// SetSecrets hands the authenticator the Secret storage, which tokens
// bound to a Secret are checked against. Until then such tokens are
// refused.
func (a *Authenticator) SetSecrets(s rest.Getter) { a.secrets.Store(&s) }

var errNotReady = errors.New("service-account tokens: storage not ready")

// AuthenticateToken verifies the token, then reads the ServiceAccount in
// the token's workspace and requires its uid to match: a deleted or
// recreated ServiceAccount's tokens stop working on the next request. A
// token bound to a Secret needs that Secret, with that uid, likewise.
// Nothing is cached, so there is nothing to invalidate.
//
// Audiences are upstream's: the context's target audiences
// (authenticator.WithAudiences, set by a TokenReview's spec.audiences) or
// else the hub's API audiences; the token must carry one of them.
func (a *Authenticator) AuthenticateToken(ctx context.Context, raw string) (*authenticator.Response, bool, error) {
	wanted, _ := authenticator.AudiencesFrom(ctx)
	v, err := a.tokens.VerifyFor(raw, wanted)
	if errors.Is(err, errNotOurs) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	p := a.store.Load()
	if p == nil {
		return nil, false, errNotReady
	}
	sctx := cluster.WithCluster(request.WithNamespace(ctx, v.Namespace), v.Cluster)
	obj, err := (*p).Get(sctx, v.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("service account %s/%s in %s no longer exists", v.Namespace, v.Name, v.Cluster)
	}
	if err != nil {
		return nil, false, fmt.Errorf("looking up service account %s/%s in %s: %w", v.Namespace, v.Name, v.Cluster, err)
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return nil, false, fmt.Errorf("service account storage returned %T", obj)
	}
	if sa.UID != v.UID {
		return nil, false, fmt.Errorf("service account %s/%s in %s was recreated", v.Namespace, v.Name, v.Cluster)
	}
	if sa.DeletionTimestamp != nil {
		return nil, false, fmt.Errorf("service account %s/%s in %s is being deleted", v.Namespace, v.Name, v.Cluster)
	}
	if v.Secret != nil {
		if err := a.checkSecret(sctx, v); err != nil {
			return nil, false, err
		}
	}
	return &authenticator.Response{User: UserInfo(v.Subject, v.ID), Audiences: v.Audiences}, true, nil
}

// checkSecret requires the Secret a token is bound to to exist, with the
// token's uid and not being deleted, in the token's namespace and
// workspace. Upstream tolerates a deletion for a minute; the hub refuses
// at once, as it does for ServiceAccounts.
func (a *Authenticator) checkSecret(sctx context.Context, v *Verified) error {
	p := a.secrets.Load()
	if p == nil {
		return errNotReady
	}
	obj, err := (*p).Get(sctx, v.Secret.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("secret %s/%s in %s the token is bound to no longer exists", v.Namespace, v.Secret.Name, v.Cluster)
	}
	if err != nil {
		return fmt.Errorf("looking up secret %s/%s in %s: %w", v.Namespace, v.Secret.Name, v.Cluster, err)
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return fmt.Errorf("secret storage returned %T", obj)
	}
	if s.UID != v.Secret.UID {
		return fmt.Errorf("secret %s/%s in %s the token is bound to was recreated", v.Namespace, v.Secret.Name, v.Cluster)
	}
	if s.DeletionTimestamp != nil {
		return fmt.Errorf("secret %s/%s in %s the token is bound to is being deleted", v.Namespace, v.Secret.Name, v.Cluster)
	}
	return nil
}

// UserInfo is the identity of a service-account token.
func UserInfo(s Subject, tokenID string) *user.DefaultInfo {
	extra := map[string][]string{ExtraCluster: {string(s.Cluster)}}
	if tokenID != "" {
		extra[extraCredentialID] = []string{"JTI=" + tokenID}
	}
	return &user.DefaultInfo{
		Name: s.Username(), UID: string(s.UID),
		Groups: append(serviceaccount.MakeGroupNames(s.Namespace), ClusterGroupPrefix+string(s.Cluster)),
		Extra:  extra,
	}
}

// BoundCluster returns the logical cluster an identity is confined to:
// a hub service-account identity, or an impersonated one (see
// cluster.ConfinedTo).
func BoundCluster(u user.Info) (cluster.ID, bool) { return cluster.ConfinedTo(u) }
