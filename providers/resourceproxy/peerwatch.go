package resourceproxy

import (
	"context"
	"net"
	"net/http"
	"sort"
	"strconv"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// peerRetry is the pause between peer watch attempts.
const peerRetry = time.Second

// peerRT sends the peer watch's requests through the peer rotation of a
// target, past a stale list (the watch is what refreshes it).
type peerRT struct{ t *targetConn }

func (p peerRT) RoundTrip(r *http.Request) (*http.Response, error) { return p.t.send(r, true) }

// watchPeers keeps an external target's peers equal to the ready
// addresses of its default/kubernetes EndpointSlices, read with the
// provider's credential (not impersonated) through the peers themselves.
// Every break of the watch starts the staleness clock; a fresh list stops
// it.
func (t *targetConn) watchPeers(ctx context.Context) {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: t.base.String(), Transport: peerRT{t}, QPS: -1})
	if err != nil {
		klog.ErrorS(err, "resource proxy: peer watch client", "target", t.name)
		return
	}
	api := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	sel := metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"}
	for ctx.Err() == nil {
		if err := t.watchOnce(ctx, api, sel); err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("resource proxy: peer watch dropped", "target", t.name, "reason", reasonUpstreamError, "err", err.Error())
		}
		if ctx.Err() != nil {
			return
		}
		t.peers.WatchDropped()
		select {
		case <-ctx.Done():
			return
		case <-time.After(peerRetry):
		}
	}
}

type sliceAPI interface {
	List(ctx context.Context, o metav1.ListOptions) (*discoveryv1.EndpointSliceList, error)
	Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
}

func (t *targetConn) watchOnce(ctx context.Context, api sliceAPI, sel metav1.ListOptions) error {
	list, err := api.List(ctx, sel)
	if err != nil {
		return err
	}
	slices := map[string]*discoveryv1.EndpointSlice{}
	for i := range list.Items {
		slices[list.Items[i].Name] = &list.Items[i]
	}
	t.publish(ctx, slices)
	o := sel
	o.ResourceVersion = list.ResourceVersion
	o.AllowWatchBookmarks = true
	w, err := api.Watch(ctx, o)
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		s, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if !ok {
			if ev.Type == watch.Error {
				return errWatch
			}
			continue
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			slices[s.Name] = s
		case watch.Deleted:
			delete(slices, s.Name)
		default:
			continue
		}
		t.publish(ctx, slices)
	}
	return errWatch
}

var errWatch = watchClosed{}

type watchClosed struct{}

func (watchClosed) Error() string { return "peer watch closed" }

// publish sets the peers to the ready addresses × the https port (or the
// only port). An empty result is published too: no_peer is then the
// honest answer. The slice is written by whoever runs the target, so it is
// a second way to name an address: an IP literal the policy refuses is
// left out here, and so is a name that resolves to one now (it is judged
// again at every dial); a list the policy refused entirely is reported.
func (t *targetConn) publish(ctx context.Context, slices map[string]*discoveryv1.EndpointSlice) {
	var hosts []string
	refused := 0
	for _, s := range slices {
		port := slicePort(s)
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				h := net.JoinHostPort(a, strconv.Itoa(int(port)))
				if t.policy != nil && !t.policy.Allows(ctx, h) {
					refused++
					continue
				}
				hosts = append(hosts, h)
			}
		}
	}
	sort.Strings(hosts)
	if refused > 0 {
		klog.V(2).InfoS("resource proxy: peers refused by the target policy", "target", t.name, "refused", refused, "kept", len(hosts))
	}
	t.peers.Publish(hosts)
	if t.policy != nil {
		t.setRefusedPeers(len(hosts) == 0 && refused > 0)
	}
}

func slicePort(s *discoveryv1.EndpointSlice) int32 {
	for _, p := range s.Ports {
		if p.Port != nil && (p.Name != nil && *p.Name == "https" || len(s.Ports) == 1) {
			return *p.Port
		}
	}
	return 0
}
