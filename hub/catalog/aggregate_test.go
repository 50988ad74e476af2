package catalog

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
)

func TestAggregate(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	rep := func(name, state, lastErr string, restarts int32, since, beat time.Duration) providersv1alpha1.ReplicaStatus {
		return providersv1alpha1.ReplicaStatus{Name: name, State: state, LastError: lastErr, Restarts: restarts,
			LastTransitionTime: at(since), HeartbeatTime: at(beat)}
	}
	checksum := "binary /x does not match its pinned sha256 checksum: checksums did not match"
	for _, c := range []struct {
		name     string
		others   []providersv1alpha1.ReplicaStatus
		self     providersv1alpha1.ReplicaStatus
		ready    metav1.ConditionStatus
		reason   string
		degraded metav1.ConditionStatus
		replica  string
		restarts int32
		lastErr  string
		elements int
	}{
		{name: "running alone", self: rep("a", "Running", "", 0, time.Minute, 0),
			ready: "True", reason: ReasonRunning, degraded: "False", replica: "a", elements: 1},
		{name: "checksum mismatch", self: rep("a", "Failed", checksum, 0, time.Minute, 0),
			ready: "False", reason: ReasonChecksumMismatch, degraded: "True", lastErr: checksum, elements: 1},
		{name: "bad manifest", self: rep("a", "Failed", "invalid provider manifest", 0, time.Minute, 0),
			ready: "False", reason: ReasonStartFailed, degraded: "True", lastErr: "invalid provider manifest", elements: 1},
		{name: "crash looping", self: rep("a", "Restarting", "plugin process exited", 3, time.Second, 0),
			ready: "False", reason: ReasonRestarting, degraded: "True", restarts: 3, lastErr: "plugin process exited", elements: 1},
		{name: "restarted and back keeps the last error", self: rep("a", "Running", "plugin process exited", 1, time.Second, 0),
			ready: "True", reason: ReasonRunning, degraded: "False", replica: "a", restarts: 1, lastErr: "plugin process exited", elements: 1},
		{name: "single: the other replica runs it", others: []providersv1alpha1.ReplicaStatus{rep("b", "Running", "", 0, time.Minute, 10*time.Second)},
			self:  rep("a", "Starting", "", 0, time.Minute, 0),
			ready: "True", reason: ReasonRunning, degraded: "False", replica: "b", elements: 2},
		{name: "failover: the newest holder wins", others: []providersv1alpha1.ReplicaStatus{rep("a", "Running", "", 0, time.Hour, 30*time.Second)},
			self:  rep("b", "Running", "", 0, time.Second, 0),
			ready: "True", reason: ReasonRunning, degraded: "False", replica: "b", elements: 2},
		{name: "stale elements are dropped", others: []providersv1alpha1.ReplicaStatus{rep("a", "Running", "", 5, time.Hour, 2*time.Minute)},
			self:  rep("b", "Restarting", "boom", 1, time.Second, 0),
			ready: "False", reason: ReasonRestarting, degraded: "True", restarts: 1, lastErr: "boom", elements: 1},
		{name: "restarts add up", others: []providersv1alpha1.ReplicaStatus{rep("a", "Restarting", "boom", 2, time.Second, 5*time.Second)},
			self:  rep("b", "Running", "", 1, time.Hour, 0),
			ready: "True", reason: ReasonRunning, degraded: "True", replica: "b", restarts: 3, lastErr: "boom", elements: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := providersv1alpha1.CatalogEntryStatus{Replicas: c.others}
			out := aggregate("p", providersv1alpha1.CatalogEntrySpec{Version: "v1"}, in, 1, c.self, now, Stale)
			r := meta.FindStatusCondition(out.Conditions, providersv1alpha1.ConditionReady)
			d := meta.FindStatusCondition(out.Conditions, providersv1alpha1.ConditionDegraded)
			run := meta.FindStatusCondition(out.Conditions, providersv1alpha1.ConditionRunning)
			if r == nil || d == nil || run == nil {
				t.Fatalf("conditions = %+v", out.Conditions)
			}
			if r.Status != c.ready || r.Reason != c.reason || d.Status != c.degraded || run.Status != c.ready {
				t.Errorf("ready %s/%s degraded %s running %s", r.Status, r.Reason, d.Status, run.Status)
			}
			if out.HubReplica != c.replica || out.RestartCount != c.restarts || out.LastError != c.lastErr || len(out.Replicas) != c.elements {
				t.Errorf("status = %+v", out)
			}
			if out.Endpoints.UI != "/ui/providers/p/" || out.Endpoints.Backend != "/services/providers/p/" || out.Version != "v1" {
				t.Errorf("endpoints/version = %+v %s", out.Endpoints, out.Version)
			}
			if c.lastErr != "" && r.Status == "False" && !strings.Contains(r.Message, c.lastErr) {
				t.Errorf("ready message %q lacks the error", r.Message)
			}
		})
	}
}
