package fairness

import (
	"context"
	"net/http"
	"slices"
	"strings"

	flowcontrol "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/hangup"
)

// Message is the text of every 429 this package answers, whichever bound
// was hit: upstream's, so clients and people see what they know.
const Message = "Too many requests, please try again later."

// retryAfterSeconds is upstream max-in-flight's Retry-After.
const retryAfterSeconds = 1

var readOnlyVerbs = sets.New("get", "list", "watch")

// Filter bounds the provider routes' requests per tenant with a flow
// control of its own: the same fair queues, budgets and shares as the
// API's (a Controller), but its own seats, so that provider streams never
// use up the API's budget, and the API's tarpit and denial pacing, so
// that both paths hold a tenant's refusals and pace its denials alike and
// together, within the same bounds.
type Filter struct {
	Flow *Controller
}

// NewProviderFilter returns the provider routes' Filter: o's budgets and
// shares, queues and queue wait, with api's tarpit and denial pacing
// (nil: refusals are answered at once and denials not paced).
//
// Before it (outside attack review B-E) the provider routes counted
// requests with a bare limiter that refused at once: 200 concurrent
// requests to a provider, each sent again the moment its 429 came,
// turned into ~2,300 refusals a second, each paid in TLS,
// authentication and encoding, and another tenant's CRUD on the API fell
// to 2.5 ops/s. Now a request over its tenant's share waits briefly in
// its tenant's fair queue as the API's do, and a refusal is answered a
// second after its arrival.
func (o *Options) NewProviderFilter(keyer Keyer, api *Controller) (Filter, error) {
	c, err := NewController(ControllerConfig{
		Keyer: keyer, Limits: o.Limits(), QueueLength: queueLength, HubQueues: hubQueues, QueueWait: queueWait,
		Clock: eventclock.Real{},
	})
	if err != nil {
		return Filter{}, err
	}
	c.ShareRefusals(api)
	return Filter{Flow: c}, nil
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

// WithProviderLimit bounds authenticated requests of the provider routes,
// which bypass the API chain. Every one counts, streams and upgrades
// included (the client alone declares a request long-running there), GET,
// HEAD and OPTIONS as read-only, each one seat. Over its tenant's share a
// request waits in its tenant's fair queue, then the hub's, at most the
// API's queue wait from its arrival here; refused, it is answered the
// API's 429 Status with Retry-After, held until a second after its
// arrival (tarpit.go). Its 403s are paced as the API's (denials.go).
func (f Filter) WithProviderLimit(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if _, ok := apirequest.ReceivedTimestampFrom(ctx); !ok {
			// The API chain's filter that records it is not on this
			// route; the wait and the hold count from here.
			ctx = apirequest.WithReceivedTimestamp(ctx, f.Flow.waitClock.Now())
			r = r.WithContext(ctx)
		}
		// The API's per-request state and writer: a 403 (the caller may
		// not use the workspace it named, or the provider denied it) is
		// paced as the API's denials are, while it holds its seat
		// (denials.go). The wrapper keeps Flusher and Hijacker, which
		// streams and upgrades need.
		// Its answer (and its body, as read) is charged to the tenant's
		// traffic budget as it is relayed, and slowed to the tenant's rate while it is in debt
		// (traffic.go): the size of a provider's answer is not learned.
		st := &state{paced: true, head: headBytes(r)}
		defer st.finish()
		if r.Body != nil && r.Body != http.NoBody {
			// What the provider reads of the body is charged too, as
			// on the API chain (state.go): an upload through a
			// provider route is traffic of its tenant like any other.
			r.Body = &countingBody{ReadCloser: r.Body, st: st}
		}
		ctx = context.WithValue(ctx, stateKey{}, st)
		r = r.WithContext(ctx)
		rw := responsewriter.WrapForHTTP1Or2(&refusalWriter{ResponseWriter: w, st: st, r: r, s: s})
		u, _ := apirequest.UserFrom(ctx)
		verb := "get"
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			// Any verb but get, list and watch is mutating.
			verb = strings.ToLower(r.Method)
		}
		digest := utilflowcontrol.RequestDigest{RequestInfo: &apirequest.RequestInfo{Verb: verb, Path: r.URL.Path}, User: u}
		served := false
		f.Flow.Handle(ctx, digest, noteNothing, oneSeat, nil, func() {
			served = true
			handler.ServeHTTP(rw, r)
		})
		if !served {
			hangup.UnlessHeld(w.Header(), !st.atOnce.Load())
			tooMany(w, r, s, schema.GroupVersion{})
		}
	})
}

func oneSeat() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }

func noteNothing(*flowcontrol.FlowSchema, *flowcontrol.PriorityLevelConfiguration, string) {}

// tooMany answers as kube-apiserver's Status for 429, with Retry-After.
func tooMany(w http.ResponseWriter, r *http.Request, s runtime.NegotiatedSerializer, gv schema.GroupVersion) {
	responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests(Message, retryAfterSeconds), s, gv, w, r)
}
