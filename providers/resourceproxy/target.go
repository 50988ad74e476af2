package resourceproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
	"github.com/wharfhub/wharf/sdk"
)

// targetConn is a live connection to one target: the base URL (scheme and
// path prefix; the host is replaced per request by the picked peer), a
// transport that authenticates as the provider's credential for that
// target, and the peers' health.
type targetConn struct {
	name  string
	base  *url.URL
	rt    http.RoundTripper
	peers *Peers
	// cfg is the credential's rest config, for the peer watch.
	cfg  *rest.Config
	stop context.CancelFunc
	// nsKnown caches namespaces known to exist on the target.
	nsKnown syncSet
	// policy judges every address dialled for an external target; nil for
	// a workspace target, whose only peer is the hub URL the hub gave.
	policy *targetpolicy.Policy
	// refusedPeers: the last peer publication listed addresses and the
	// policy refused all of them; onRefusal is called when it changes, so
	// the controller re-checks the status.
	refusedPeers atomic.Bool
	onRefusal    func()
	// toHub: a workspace target, on this hub. Only requests to it carry
	// the routed request's delegation (sdk.HeaderDelegation): the hub
	// serves them on that request's seats, which they would otherwise
	// wait for behind it (sixth outside review, W10).
	toHub bool
}

// dialError marks an error as a failed dial: nothing was sent, so the
// request may go to another peer.
type dialError struct {
	host   string
	reason string
	err    error
}

func (e *dialError) Error() string { return fmt.Sprintf("dial %s: %v", e.host, e.err) }
func (e *dialError) Unwrap() error { return e.err }

// unavailableError is a request that found no usable peer.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return "no usable peer: " + e.reason }

// newTargetConn builds the transport for cfg (the provider's credential for
// the target). seeds are the initial peers; the dial (dial) to every peer
// is timed by c (DialTimeout), goes through policy when it is set, and
// feeds the health state machine and metrics.
func newTargetConn(name string, cfg *rest.Config, seeds []string, c clock.WithDelayedExecution, m *Metrics, dial DialFunc, policy *targetpolicy.Policy) (*targetConn, error) {
	base, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("target %q: host: %w", name, err)
	}
	if base.Scheme != "https" {
		return nil, fmt.Errorf("target %q: only https targets are supported", name)
	}
	t := &targetConn{name: name, base: base, peers: NewPeers(c, seeds), cfg: rest.CopyConfig(cfg), policy: policy}
	t.peers.onQuarantine = func() { m.quarantines.WithLabelValues(name).Inc() }
	tc := rest.CopyConfig(cfg)
	// Every peer presents the certificate of the configured server name, so
	// verification keeps that name while the dial goes to the peer's address.
	if tc.TLSClientConfig.ServerName == "" {
		tc.TLSClientConfig.ServerName = base.Hostname()
	}
	tlsCfg, err := rest.TLSConfigFor(tc)
	if err != nil {
		return nil, fmt.Errorf("target %q: tls: %w", name, err)
	}
	d := &healthDialer{target: name, peers: t.peers, clock: c, metrics: m, dial: dial, policy: policy}
	tr := &http.Transport{
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	tc.TLSClientConfig = rest.TLSClientConfig{}
	wrapped, err := rest.HTTPWrappersForConfig(tc, tr)
	if err != nil {
		return nil, fmt.Errorf("target %q: auth: %w", name, err)
	}
	t.rt = wrapped
	return t, nil
}

// healthDialer dials one peer with the 5 s timeout of the injected clock and
// reports the outcome to the peer set. With a policy, the peer's host is
// resolved and judged first and only judged addresses are dialled: the
// check sits here, under every request, the peer watch and the trial
// dials, not only in validation, so a name that later resolves to
// loopback is refused too.
type healthDialer struct {
	target  string
	peers   *Peers
	clock   clock.WithDelayedExecution
	metrics *Metrics
	dial    DialFunc
	policy  *targetpolicy.Policy
}

func (d *healthDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	start := d.clock.Now()
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	timer := d.clock.AfterFunc(DialTimeout, func() { timedOut.Store(true); cancel() })
	var conn net.Conn
	var err error
	if d.policy != nil {
		conn, err = d.policy.DialContext(dctx, network, addr, targetpolicy.DialFunc(d.dial))
	} else {
		conn, err = d.dial(dctx, network, addr)
	}
	timer.Stop()
	if targetpolicy.IsRefused(err) {
		// Nothing was sent: the answer is the same whether the port is
		// open or not. It counts as a failed dial, so the peer leaves the
		// rotation like any other that cannot be used.
		d.metrics.dialFailures.WithLabelValues(d.target, reasonError).Inc()
		d.peers.Result(addr, err)
		klog.V(2).InfoS("resource proxy: peer refused by the target policy", "target", d.target, "peer", addr, "reason", reasonError, "err", err.Error())
		return nil, &dialError{host: addr, reason: reasonError, err: err}
	}
	d.metrics.dialDuration.WithLabelValues(d.target).Observe(d.clock.Since(start).Seconds())
	if err == nil {
		d.peers.Result(addr, nil)
		return conn, nil
	}
	reason := reasonUpstreamError
	switch {
	case timedOut.Load():
		reason = reasonTimeout
	case ctx.Err() != nil:
		// The caller left: says nothing about the peer.
		d.peers.ReleaseTrial(addr)
		return nil, &dialError{host: addr, reason: reasonCanceled, err: err}
	}
	d.metrics.dialFailures.WithLabelValues(d.target, reason).Inc()
	d.peers.Result(addr, err)
	klog.V(2).InfoS("resource proxy: peer dial failed", "target", d.target, "peer", addr, "reason", reason, "err", err.Error())
	return nil, &dialError{host: addr, reason: reason, err: err}
}

// setRefusedPeers records whether the last publication's peers were all
// refused. A dial refused later (a name that changed its answer) is not
// recorded here: it is a 503 like any failed dial, and the verdict stays
// the publication's, so the status does not flap with the peer watch.
func (t *targetConn) setRefusedPeers(v bool) {
	if t.refusedPeers.Swap(v) == v {
		return
	}
	if v {
		klog.InfoS("resource proxy: the target policy refuses every peer of the target", "target", t.name)
	}
	if t.onRefusal != nil {
		t.onRefusal()
	}
}

// refusal is the problem the policy makes of this target now, nil when
// none: the controller reports it and stops routing.
func (t *targetConn) refusal() *problem {
	if t.refusedPeers.Load() {
		return &problem{ReasonTargetAddressRefused, msgPeersRefused}
	}
	return nil
}

// roundTrip sends req (whose URL path and query are the target's) to the
// next usable peer; a failed dial moves on to the next peer, because
// nothing was sent. The request body must be replayable (GetBody) or nil.
func (t *targetConn) roundTrip(req *http.Request) (*http.Response, error) {
	return t.send(req, false)
}

func (t *targetConn) send(req *http.Request, peerWatch bool) (*http.Response, error) {
	var last error
	for attempt := 0; attempt <= len(t.peers.Hosts()); attempt++ {
		host, trial, reason := t.peers.pick(peerWatch)
		if reason != "" {
			if last != nil {
				return nil, last
			}
			return nil, &unavailableError{reason: reason}
		}
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host = t.base.Scheme, host
		out.Host = ""
		if t.toHub {
			sdk.SetDelegation(out)
		} else {
			out.Header.Del(sdk.HeaderDelegation)
		}
		if attempt > 0 && req.GetBody != nil {
			b, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("replay body: %w", err)
			}
			out.Body = b
		}
		resp, err := t.rt.RoundTrip(out)
		var de *dialError
		if errors.As(err, &de) {
			last = err
			if de.reason == reasonCanceled || (req.Body != nil && req.GetBody == nil) {
				return nil, err
			}
			continue
		}
		if trial {
			// The trial reached the peer (on a pooled connection or a new
			// dial); an error after connecting fails the trial.
			t.peers.Result(host, err)
		}
		return resp, err
	}
	return nil, last
}

// url builds the target URL for an API path (/apis/...) and query.
func (t *targetConn) url(path, rawQuery string) *url.URL {
	u := *t.base
	u.Path = t.base.Path + path
	u.RawPath = ""
	if t.base.RawPath != "" {
		u.RawPath = t.base.RawPath + path
	}
	u.RawQuery = rawQuery
	return &u
}
