package edges

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// conflictRetries bounds the re-read loops below; an edge whose status the
// controller is writing at the same moment needs one or two.
const conflictRetries = 5

// errUnauthorized is the one answer to every failed join and every refused
// agent credential: wrong, used or expired token, a missing edge, a deleted
// edge. Telling them apart would let a caller probe which edges exist.
var errUnauthorized = apierrors.NewUnauthorized("invalid or expired edge credential")

// mintJoinToken stores the hash of a fresh join token on the Edge, replacing
// any earlier token, and returns the token and its expiry. The caller has
// been authorized for update on the Edge.
func (p *Provider) mintJoinToken(ctx context.Context, cluster, name string) (string, time.Time, error) {
	token, err := newSecret()
	if err != nil {
		return "", time.Time{}, apierrors.NewInternalError(err)
	}
	expires := p.clock.Now().Add(p.cfg.JoinTokenTTL.Duration).UTC().Truncate(time.Second)
	for range conflictRetries {
		e, err := p.store.get(ctx, cluster, name)
		if err != nil {
			return "", time.Time{}, err
		}
		if e.DeletionTimestamp != nil {
			return "", time.Time{}, apierrors.NewConflict(edgeGR, name, errors.New("the edge is being deleted"))
		}
		if e.Annotations == nil {
			e.Annotations = map[string]string{}
		}
		e.Annotations[AnnJoinTokenHash] = hashSecret(token)
		e.Annotations[AnnJoinTokenExpires] = expires.Format(time.RFC3339)
		_, err = p.store.update(ctx, cluster, e)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return "", time.Time{}, err
		}
		klog.FromContext(ctx).Info("minted a join token", "cluster", cluster, "edge", name, "expires", expires)
		return token, expires, nil
	}
	return "", time.Time{}, apierrors.NewConflict(edgeGR, name, errors.New("the edge kept changing; try again"))
}

// exchangeJoinToken spends a join token and returns a new agent credential.
// Single use holds under concurrency because the token's hash is removed by
// an update carrying the resourceVersion the hash was read at: of two
// exchanges of one token, only one update succeeds, and the loser re-reads
// an Edge without the hash.
func (p *Provider) exchangeJoinToken(ctx context.Context, cluster, name, token string) (string, error) {
	log := klog.FromContext(ctx).WithValues("cluster", cluster, "edge", name)
	for range conflictRetries {
		e, err := p.store.get(ctx, cluster, name)
		if apierrors.IsNotFound(err) {
			return "", errUnauthorized
		}
		if err != nil {
			return "", fmt.Errorf("join: %w", err)
		}
		if e.DeletionTimestamp != nil || !hashMatches(e.Annotations[AnnJoinTokenHash], token) {
			return "", errUnauthorized
		}
		exp, err := time.Parse(time.RFC3339, e.Annotations[AnnJoinTokenExpires])
		if err != nil || !p.clock.Now().Before(exp) {
			log.Info("refused an expired join token")
			return "", errUnauthorized
		}
		cred, err := newSecret()
		if err != nil {
			return "", apierrors.NewInternalError(err)
		}
		delete(e.Annotations, AnnJoinTokenHash)
		delete(e.Annotations, AnnJoinTokenExpires)
		delete(e.Annotations, AnnPreviousCredentialHash)
		e.Annotations[AnnCredentialHash] = hashSecret(cred)
		e.Annotations[AnnCredentialIssued] = p.clock.Now().UTC().Format(time.RFC3339)
		_, err = p.store.update(ctx, cluster, e)
		if apierrors.IsConflict(err) {
			continue // re-read: the token may have been spent meanwhile
		}
		if err != nil {
			return "", fmt.Errorf("join: %w", err)
		}
		log.Info("an agent joined")
		p.enqueue(cluster, name)
		return cred, nil
	}
	return "", apierrors.NewServiceUnavailable("the edge kept changing; try again")
}
