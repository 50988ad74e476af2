package server

import (
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/plugins"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		st   plugins.Status
		want time.Duration
	}{
		{"backoff ahead", plugins.Status{State: plugins.StateRestarting, NextStart: now.Add(7 * time.Second)}, 7 * time.Second},
		{"rounded up", plugins.Status{State: plugins.StateRestarting, NextStart: now.Add(2300 * time.Millisecond)}, 3 * time.Second},
		{"under a second", plugins.Status{State: plugins.StateRestarting, NextStart: now.Add(10 * time.Millisecond)}, time.Second},
		{"launch under way", plugins.Status{State: plugins.StateRestarting, NextStart: now.Add(-time.Second)}, 0},
		{"first start", plugins.Status{State: plugins.StateStarting}, 0},
		{"failed for good", plugins.Status{State: plugins.StateFailed, NextStart: now.Add(time.Minute)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfter(tc.st, now); got != tc.want {
				t.Fatalf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}
