package sdk

import (
	"context"
	"net/http"
)

// HeaderDelegation is set by the hub on a request it routes to a provider
// for a workspace's APIService while that request holds seats of its
// tenant's share. A provider that calls the hub back to serve it (as the
// resource proxy reads its workspace target) sends the value back
// unchanged on those calls: the hub then serves them on the seats the
// routed request holds, one at a time, instead of queueing them for seats
// of the same tenant behind it (which the routed request, waiting for
// them, would never give back). It is worth nothing but to the hub that
// set it, and only while the routed request runs; never send it anywhere
// else (an external cluster).
const HeaderDelegation = "X-Wharf-Delegation"

type delegationKey struct{}

// WithDelegation returns ctx carrying r's delegation (HeaderDelegation),
// for SetDelegation on the calls made to serve r.
func WithDelegation(ctx context.Context, r *http.Request) context.Context {
	tok := r.Header.Get(HeaderDelegation)
	if tok == "" {
		return ctx
	}
	return context.WithValue(ctx, delegationKey{}, tok)
}

// SetDelegation sets out's HeaderDelegation from its context
// (WithDelegation), or removes it: only for requests to the hub.
func SetDelegation(out *http.Request) {
	out.Header.Del(HeaderDelegation)
	if tok, ok := out.Context().Value(delegationKey{}).(string); ok && tok != "" {
		out.Header.Set(HeaderDelegation, tok)
	}
}
