package fairness

import (
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/authn"
)

// Message is the text of every 429 this package answers, whichever bound
// was hit: upstream's, so clients and people see what they know.
const Message = "Too many requests, please try again later."

// retryAfterSeconds is upstream max-in-flight's Retry-After.
const retryAfterSeconds = 1

var readOnlyVerbs = sets.New("get", "list", "watch")

// Filter limits requests per tenant; one Filter is one set of budgets.
type Filter struct {
	Limiter *Limiter
	Keyer   Keyer
}

// isProbe reports a health probe: GET of exactly /livez, /readyz or
// /healthz. Upstream's "probes" FlowSchema puts exactly these in the exempt
// priority level, for authenticated and anonymous callers alike. Here every
// anonymous caller is one tenant (user:system:anonymous), so without the
// exemption anybody able to reach the hub could hold that share with a
// flood and fail every kubelet's and load balancer's probe, which carry no
// credential (issue 17). The handlers are in-memory checks with bounded
// time (the etcd check has its own timeout); sub-paths and other verbs are
// counted as before.
func isProbe(info *apirequest.RequestInfo) bool {
	return !info.IsResourceRequest && info.Verb == "get" && slices.Contains(authn.HealthPaths(), info.Path)
}

// WithProviderLimit limits authenticated requests of the provider routes,
// which bypass the API chain. Every one counts, streams and upgrades
// included (the client alone declares a request long-running there), GET,
// HEAD and OPTIONS as read-only. Its Filter should have a Limiter of its
// own, so that provider streams never use up the API's budget.
func (f Filter) WithProviderLimit(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := Mutating
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			kind = ReadOnly
		}
		f.serve(w, r, kind, handler, func() { tooMany(w, r, s, schema.GroupVersion{}) })
	})
}

func (f Filter) serve(w http.ResponseWriter, r *http.Request, kind Kind, next http.Handler, reject func()) {
	u, _ := apirequest.UserFrom(r.Context())
	tenant, exempt := f.Keyer.Tenant(r.Context(), u)
	if exempt {
		next.ServeHTTP(w, r)
		return
	}
	release, ok := f.Limiter.Acquire(tenant, kind)
	if !ok {
		// The tenant key is a workspace path or user name, never a
		// credential.
		klog.V(3).InfoS("Request over its tenant's in-flight share or the hub's budget", "tenant", tenant, "mutating", kind == Mutating, "path", r.URL.Path)
		reject()
		return
	}
	defer release()
	next.ServeHTTP(w, r)
}

// tooMany answers as kube-apiserver's Status for 429, with Retry-After.
func tooMany(w http.ResponseWriter, r *http.Request, s runtime.NegotiatedSerializer, gv schema.GroupVersion) {
	responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests(Message, retryAfterSeconds), s, gv, w, r)
}
