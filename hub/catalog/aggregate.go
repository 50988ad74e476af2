package catalog

import (
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/plugins"
)

// Condition reasons.
const (
	ReasonRunning          = "Running"
	ReasonChecksumMismatch = "ChecksumMismatch"
	ReasonStartFailed      = "StartFailed"
	ReasonRestarting       = "Restarting"
	ReasonStarting         = "Starting"
	ReasonStopped          = "Stopped"
	ReasonNotRunning       = "NotRunning"
	ReasonAsExpected       = "AsExpected"
)

// replicaOf turns this replica's host status into its status element.
func replicaOf(name string, st plugins.Status, now time.Time) providersv1alpha1.ReplicaStatus {
	r := providersv1alpha1.ReplicaStatus{
		Name: name, State: string(st.State), Restarts: int32(st.Restarts), LastError: st.LastError,
		Pid: int32(st.Pid), HeartbeatTime: metav1.NewTime(now),
	}
	if !st.Since.IsZero() {
		r.LastTransitionTime = metav1.NewTime(st.Since)
	}
	if st.State == plugins.StateRestarting && !st.NextStart.IsZero() {
		t := metav1.NewTime(st.NextStart)
		r.NextRetryTime = &t
	}
	return r
}

// reasonOf says why a replica is in its state, in CamelCase.
func reasonOf(r providersv1alpha1.ReplicaStatus) string {
	switch plugins.State(r.State) {
	case plugins.StateRunning:
		return ReasonRunning
	case plugins.StateFailed:
		// The host reports a pinned-checksum mismatch with this wording
		// (hub/plugins startOnce); it is the one failure an operator must
		// fix with a new binary or a new pin, so it gets its own reason.
		if strings.Contains(r.LastError, "checksum") {
			return ReasonChecksumMismatch
		}
		return ReasonStartFailed
	case plugins.StateRestarting:
		return ReasonRestarting
	case plugins.StateStarting:
		return ReasonStarting
	case plugins.StateStopped:
		return ReasonStopped
	}
	return ReasonNotRunning
}

// severity orders non-running states: the worst one explains the entry.
func severity(r providersv1alpha1.ReplicaStatus) int {
	switch plugins.State(r.State) {
	case plugins.StateFailed:
		return 4
	case plugins.StateRestarting:
		return 3
	case plugins.StateStarting:
		return 2
	case plugins.StateStopped:
		return 1
	}
	return 0
}

// aggregate merges self into status.replicas, drops elements whose
// heartbeat is older than stale, and recomputes everything derived from
// the elements. It changes only what this replica may change: its own
// element and the aggregate.
func aggregate(name string, spec providersv1alpha1.CatalogEntrySpec, in providersv1alpha1.CatalogEntryStatus, generation int64,
	self providersv1alpha1.ReplicaStatus, now time.Time, stale time.Duration) providersv1alpha1.CatalogEntryStatus {
	return recompute(name, spec, in, generation, self.Name, &self, now, stale)
}

// withoutReplica drops this replica's element (it no longer runs the
// provider) and stale ones, then recomputes the aggregate.
func withoutReplica(name string, spec providersv1alpha1.CatalogEntrySpec, in providersv1alpha1.CatalogEntryStatus, generation int64,
	replica string, now time.Time, stale time.Duration) providersv1alpha1.CatalogEntryStatus {
	return recompute(name, spec, in, generation, replica, nil, now, stale)
}

func recompute(name string, spec providersv1alpha1.CatalogEntrySpec, in providersv1alpha1.CatalogEntryStatus, generation int64,
	replica string, self *providersv1alpha1.ReplicaStatus, now time.Time, stale time.Duration) providersv1alpha1.CatalogEntryStatus {
	out := *in.DeepCopy()
	var reps []providersv1alpha1.ReplicaStatus
	for _, r := range in.Replicas {
		if r.Name == replica || now.Sub(r.HeartbeatTime.Time) > stale {
			continue
		}
		reps = append(reps, r)
	}
	if self != nil {
		reps = append(reps, *self)
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].Name < reps[j].Name })
	out.Replicas = reps
	out.Version = spec.Version
	out.Endpoints = providersv1alpha1.CatalogEndpoints{UI: "/ui/providers/" + name + "/", Backend: "/services/providers/" + name + "/"}

	var running []providersv1alpha1.ReplicaStatus
	var worst *providersv1alpha1.ReplicaStatus
	out.RestartCount, out.LastError, out.HubReplica = 0, "", ""
	for i, r := range reps {
		out.RestartCount += r.Restarts
		if plugins.State(r.State) == plugins.StateRunning {
			running = append(running, r)
			continue
		}
		if worst == nil || severity(r) > severity(*worst) {
			worst = &reps[i]
		}
	}
	// The newest holder wins: after a failover the old holder's element
	// may still say Running until its heartbeat goes stale.
	sort.SliceStable(running, func(i, j int) bool { return running[i].LastTransitionTime.After(running[j].LastTransitionTime.Time) })
	if worst != nil && worst.LastError != "" {
		out.LastError = worst.LastError
	} else {
		for _, r := range append(running, reps...) {
			if r.LastError != "" {
				out.LastError = r.LastError
				break
			}
		}
	}

	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation})
	}
	if len(running) > 0 {
		out.HubReplica = running[0].Name
		msg := "running on hub replica " + running[0].Name
		set(providersv1alpha1.ConditionRunning, metav1.ConditionTrue, ReasonRunning, msg)
		set(providersv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonRunning, "serving at "+out.Endpoints.Backend)
	} else {
		reason, msg := ReasonNotRunning, "no hub replica runs the provider"
		if worst != nil {
			reason = reasonOf(*worst)
			msg = "hub replica " + worst.Name + ": " + strings.ToLower(worst.State)
			if worst.LastError != "" {
				msg += ": " + worst.LastError
			}
		}
		set(providersv1alpha1.ConditionRunning, metav1.ConditionFalse, reason, msg)
		set(providersv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	}
	if worst != nil && severity(*worst) >= 3 {
		msg := "hub replica " + worst.Name + ": " + strings.ToLower(worst.State)
		if worst.LastError != "" {
			msg += ": " + worst.LastError
		}
		set(providersv1alpha1.ConditionDegraded, metav1.ConditionTrue, reasonOf(*worst), msg)
	} else {
		set(providersv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	return out
}
