package catalog

import (
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/plugins"
)

// TestReplicaOfNextRetry: the supervisor's backoff reaches the entry
// while it waits, and only then.
func TestReplicaOfNextRetry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	next := now.Add(4 * time.Second)
	for _, tc := range []struct {
		name string
		st   plugins.Status
		want *time.Time
	}{
		{"restarting", plugins.Status{State: plugins.StateRestarting, NextStart: next, Restarts: 3}, &next},
		{"running", plugins.Status{State: plugins.StateRunning}, nil},
		{"failed", plugins.Status{State: plugins.StateFailed, NextStart: next}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := replicaOf("hub-0", tc.st, now)
			switch {
			case tc.want == nil && r.NextRetryTime != nil:
				t.Fatalf("nextRetryTime %v, want none", r.NextRetryTime)
			case tc.want != nil && (r.NextRetryTime == nil || !r.NextRetryTime.Time.Equal(*tc.want)):
				t.Fatalf("nextRetryTime %v, want %v", r.NextRetryTime, *tc.want)
			}
		})
	}
}
