package edges

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/sdk/clusters"
)

// Condition reasons.
const (
	ReasonAgentJoined    = "AgentJoined"
	ReasonAwaitingJoin   = "AwaitingJoin"
	ReasonTunnelUp       = "TunnelUp"
	ReasonTunnelDown     = "TunnelDown"
	ReasonNeverConnected = "NeverConnected"
)

// enqueue asks the status controller to look at one edge.
func (p *Provider) enqueue(cluster, name string) {
	if p.queue != nil {
		p.queue.Add(clusters.ToKey(cluster, "", name))
	}
}

// runStatus is the status controller: one worker, keys "<cluster>|<name>".
// Liveness is in memory (the registry); status is written only when the
// computed status differs from the stored one, which happens on transitions
// and when a connected edge's heartbeat is older than HeartbeatInterval,
// the way the node controller treats kubelet heartbeats.
func (p *Provider) runStatus(ctx context.Context) {
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	go p.heartbeats(ctx)
	go p.startupGrace(ctx)
	for p.nextStatus(ctx) {
	}
}

func (p *Provider) nextStatus(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	if err := p.reconcileStatus(ctx, key); err != nil {
		if !apierrors.IsConflict(err) {
			klog.FromContext(ctx).Error(err, "writing edge status", "key", key)
		}
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// heartbeats re-examines the connected edges at a fraction of the interval;
// reconcileStatus writes only those whose heartbeat is due.
func (p *Provider) heartbeats(ctx context.Context) {
	t := p.clock.NewTicker(p.cfg.HeartbeatInterval.Duration / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			p.tunnels.mu.Lock()
			ids := make([]string, 0, len(p.tunnels.m))
			for id := range p.tunnels.m {
				ids = append(ids, id)
			}
			p.tunnels.mu.Unlock()
			for _, id := range ids {
				p.enqueueID(id)
			}
		}
	}
}

// startupGrace ends the grace after a (re)start: edges whose status still
// says connected but whose agent has not come back are then Disconnected.
func (p *Provider) startupGrace(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-p.clock.After(p.cfg.StartupGrace.Duration):
	}
	p.graceOver.Store(true)
	for _, key := range p.store.keys() {
		p.queue.Add(key)
	}
}

func (p *Provider) enqueueID(id string) {
	for i := 0; i < len(id); i++ {
		if id[i] == '/' {
			p.enqueue(id[:i], id[i+1:])
			return
		}
	}
}

func (p *Provider) reconcileStatus(ctx context.Context, key string) error {
	cluster, _, name, err := clusters.SplitKey(key)
	if err != nil {
		return nil // malformed keys are never retried
	}
	e, err := p.store.cachedOrGet(ctx, cluster, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.DeletionTimestamp != nil {
		p.closeEdge(cluster, name) // its credential is refused already
		return nil
	}
	t, _ := p.tunnels.get(tunnelID(cluster, name))
	if t != nil && p.revokeStale(ctx, cluster, e, t) {
		return nil // tunnelDone enqueues the edge again
	}
	want, ok := p.desiredStatus(cluster, e, t)
	if !ok || equality.Semantic.DeepEqual(want, e.Status) {
		return nil
	}
	next := deepCopy(e)
	next.Status = want
	if _, err := p.store.updateStatus(ctx, cluster, next); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("edge %s status: %w", name, err)
	}
	p.metrics.statusWrites.Inc()
	klog.FromContext(ctx).V(2).Info("wrote edge status", "cluster", cluster, "edge", name, "phase", want.Phase)
	return nil
}

// desiredStatus computes an edge's status from the stored one and the
// in-memory tunnel. ok is false when the status must be left alone (an
// edge that was connected before a restart, within the startup grace).
func (p *Provider) desiredStatus(cluster string, e *v1alpha1.Edge, t *tunnel) (v1alpha1.EdgeStatus, bool) {
	now := metav1.NewTime(p.clock.Now().Truncate(time.Second))
	st := deepCopy(e).Status
	st.URL = p.edgeURL(cluster, e.Name, e.Spec.Type)
	st.ObservedGeneration = e.Generation
	set := func(typ string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: e.Generation, LastTransitionTime: now})
	}
	if e.Annotations[AnnCredentialHash] != "" {
		set(v1alpha1.ConditionRegistered, metav1.ConditionTrue, ReasonAgentJoined, "an agent holds a credential for this edge")
	} else {
		set(v1alpha1.ConditionRegistered, metav1.ConditionFalse, ReasonAwaitingJoin, "no agent has joined yet")
	}
	wasConnected := meta.IsStatusConditionTrue(e.Status.Conditions, v1alpha1.ConditionConnected)
	id := tunnelID(cluster, e.Name)
	switch {
	case t != nil:
		st.Phase = v1alpha1.PhaseReady
		set(v1alpha1.ConditionConnected, metav1.ConditionTrue, ReasonTunnelUp, "the agent's tunnel is up")
		st.AgentVersion, st.Hostname = t.info.version, t.info.hostname
		if e.Spec.Type == v1alpha1.TypeServer {
			st.SSHHostKey = t.info.sshHostKey
		}
		hb := st.LastHeartbeatTime
		if !wasConnected || e.Status.Phase != v1alpha1.PhaseReady || hb == nil || !now.Time.Before(hb.Add(p.cfg.HeartbeatInterval.Duration)) {
			st.LastHeartbeatTime = &now
		}
	case wasConnected && !p.graceOver.Load() && !p.tunnels.wasSeen(id):
		// Another process held this tunnel; its agent is likely
		// reconnecting right now. Touch nothing until the grace ends.
		return st, false
	case wasConnected || e.Status.Phase == v1alpha1.PhaseReady || e.Status.Phase == v1alpha1.PhaseDisconnected:
		st.Phase = v1alpha1.PhaseDisconnected
		set(v1alpha1.ConditionConnected, metav1.ConditionFalse, ReasonTunnelDown, "the agent's tunnel is down")
	default:
		st.Phase = v1alpha1.PhasePending
		set(v1alpha1.ConditionConnected, metav1.ConditionFalse, ReasonNeverConnected, "no agent has connected yet")
	}
	return st, true
}

// edgeURL is where consumers reach an edge, through the hub.
func (p *Provider) edgeURL(cluster, name string, typ v1alpha1.EdgeType) string {
	sub := "/k8s"
	if typ == v1alpha1.TypeServer {
		sub = "/ssh"
	}
	return p.hubURL + protocol.BackendPrefix + protocol.EgressBase(cluster, name) + sub
}
