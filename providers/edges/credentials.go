package edges

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// credentialMatch says which stored credential a presented one matched.
type credentialMatch int

const (
	matchNone credentialMatch = iota
	matchCurrent
	matchPrevious
)

func matchCredential(e *v1alpha1.Edge, cred string) credentialMatch {
	if e == nil || e.DeletionTimestamp != nil {
		return matchNone
	}
	// Both comparisons always run, so timing does not tell which matched.
	cur := hashMatches(e.Annotations[AnnCredentialHash], cred)
	prev := hashMatches(e.Annotations[AnnPreviousCredentialHash], cred)
	switch {
	case cur:
		return matchCurrent
	case prev:
		return matchPrevious
	}
	return matchNone
}

// authenticateAgent checks an agent credential against its Edge and rotates
// it when due. It returns the Edge and, if it minted one, the credential
// the agent must switch to (sent in the 101 answer).
//
// The cache answers first; on a miss (a rotation or a join the informer has
// not seen yet) a live GET decides, so a fresh credential works at once.
func (p *Provider) authenticateAgent(ctx context.Context, cluster, name, cred string) (*v1alpha1.Edge, string, error) {
	if cred == "" {
		return nil, "", errUnauthorized
	}
	e, ok := p.store.cached(cluster, name)
	if !ok || matchCredential(e, cred) == matchNone {
		var err error
		e, err = p.store.get(ctx, cluster, name)
		if apierrors.IsNotFound(err) {
			return nil, "", errUnauthorized
		}
		if err != nil {
			return nil, "", fmt.Errorf("agent credential: %w", err)
		}
	}
	for range conflictRetries {
		m := matchCredential(e, cred)
		if m == matchNone {
			return nil, "", errUnauthorized
		}
		next, rotated, changed, err := p.rotation(e, m)
		if err != nil {
			return nil, "", err
		}
		if !changed {
			return e, "", nil
		}
		out, err := p.store.update(ctx, cluster, next)
		if apierrors.IsConflict(err) {
			if e, err = p.store.get(ctx, cluster, name); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, "", errUnauthorized
				}
				return nil, "", fmt.Errorf("agent credential: %w", err)
			}
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("agent credential: %w", err)
		}
		if rotated != "" {
			klog.FromContext(ctx).Info("rotated an agent credential", "cluster", cluster, "edge", name)
		}
		return out, rotated, nil
	}
	return nil, "", apierrors.NewServiceUnavailable("the edge kept changing; try again")
}

// rotation computes the Edge's next credential annotations after a
// credential matched:
//   - the current one, used for the first time since a rotation: the
//     previous one is retired;
//   - the current one, older than the rotation period: a new one is
//     minted and the used one kept as previous;
//   - the previous one: the agent never got (or saved) the new one, so it
//     gets another new one, and previous stays valid until that is used.
func (p *Provider) rotation(e *v1alpha1.Edge, m credentialMatch) (next *v1alpha1.Edge, rotated string, changed bool, err error) {
	next = deepCopy(e)
	a := next.Annotations
	now := p.clock.Now()
	due := true
	if t, err := time.Parse(time.RFC3339, a[AnnCredentialIssued]); err == nil {
		due = !now.Before(t.Add(p.cfg.CredentialRotation.Duration))
	}
	if m == matchCurrent && !due {
		if _, ok := a[AnnPreviousCredentialHash]; !ok {
			return e, "", false, nil
		}
		delete(a, AnnPreviousCredentialHash)
		return next, "", true, nil
	}
	cred, err := newSecret()
	if err != nil {
		return nil, "", false, apierrors.NewInternalError(err)
	}
	if m == matchCurrent {
		a[AnnPreviousCredentialHash] = a[AnnCredentialHash]
	}
	a[AnnCredentialHash] = hashSecret(cred)
	a[AnnCredentialIssued] = now.UTC().Format(time.RFC3339)
	return next, cred, true, nil
}
