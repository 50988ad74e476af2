package authn

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// A TokenReview asks the hub to evaluate a credential on the reviewer's
// behalf. Upstream does so without limit; on the hub, where any
// workspace admin may review tokens in their workspace, that would turn
// one good credential into an unthrottled guessing machine for static
// tokens. So a review is charged like a request carrying the reviewed
// token: from the reviewer's client address, on the same failure budget.

type clientAddressKey struct{}

// withClientAddress records the request's client address (as the
// throttle sees it) for handlers that evaluate credentials themselves.
func withClientAddress(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddressKey{}, addr)
}

// clientAddressFrom returns the address WithThrottle recorded, or "" (one
// shared budget) if the request did not pass it.
func clientAddressFrom(ctx context.Context) string {
	addr, _ := ctx.Value(clientAddressKey{}).(string)
	return addr
}

// Admit refuses (429, as WithThrottle) to evaluate a guessable token for
// a reviewer whose address is over its failure budget, unless that token
// authenticated from there before. Signed tokens (JWTs) pass: guessing
// one is hopeless, and the review itself is an authenticated request,
// bounded by its reviewer's tenant share (hub/fairness), unlike the
// unauthenticated floods WithThrottle bounds.
func (t *Throttle) Admit(ctx context.Context, token string) error {
	if isJWT(token) {
		return nil
	}
	addr := clientAddressFrom(ctx)
	over, wait := t.failures.Exhausted(addr)
	if !over || t.known(addr, "Bearer "+token) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Throttling token review", "address", addr)
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	return apierrors.NewTooManyRequests("too many failed authentication attempts, retry later", secs)
}

// Failed charges a review whose guessable token was not reported
// authenticated to the reviewer's address. Signed tokens are not charged:
// nobody can guess one, and charging them would let a reviewer checking
// expired tokens lock out everybody behind its address.
func (t *Throttle) Failed(ctx context.Context, token string) {
	if isJWT(token) {
		return
	}
	t.failures.Charge(clientAddressFrom(ctx))
}
