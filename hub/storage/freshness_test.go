package storage

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	testingclock "k8s.io/utils/clock/testing"
)

// revisionStore answers GetCurrentResourceVersion with rev and reports
// every progress request, with its context's metadata.
type revisionStore struct {
	storage.Interface
	rev   uint64
	asked chan metadata.MD
}

func (s *revisionStore) GetCurrentResourceVersion(context.Context) (uint64, error) { return s.rev, nil }

func (s *revisionStore) RequestWatchProgress(ctx context.Context) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	s.asked <- md
	return nil
}

// A consistent read that would wait for the cache asks etcd for progress
// at once, on the cache's watch stream, at most once per freshAskEvery; a
// read the cache is fresh for asks nothing (review 5, #24).
func TestConsistentReadAsksForProgress(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	s := &revisionStore{rev: 100, asked: make(chan metadata.MD, 10)}
	b := &boundedHistory{Interface: s, clk: clk}
	// A request is made by a goroutine: one expected is waited for
	// long; one not expected is looked for briefly (a late one would
	// show at the next look, which expects none or one).
	asked := func(wait time.Duration) (metadata.MD, bool) {
		select {
		case md := <-s.asked:
			return md, true
		case <-time.After(wait):
			return nil, false
		}
	}
	b.seen.Store(100)
	if rv, err := b.GetCurrentResourceVersion(context.Background()); rv != 100 || err != nil {
		t.Fatalf("got %d, %v", rv, err)
	}
	if _, ok := asked(100 * time.Millisecond); ok {
		t.Fatal("asked for progress while the cache was fresh")
	}
	s.rev = 120
	if _, err := b.GetCurrentResourceVersion(context.Background()); err != nil {
		t.Fatal(err)
	}
	md, ok := asked(time.Minute)
	if !ok {
		t.Fatal("no progress request while the cache was behind")
	}
	// The cache's watch stream: source=cache while upstream's
	// SeparateCacheWatchRPC is on (it is off and locked from 1.36).
	want := ""
	if utilfeature.DefaultFeatureGate.Enabled(features.SeparateCacheWatchRPC) {
		want = "cache"
	}
	if got := strings.Join(md.Get("source"), ","); got != want {
		t.Errorf("progress requested with metadata %v, want source=%q (the cache's watch stream)", md, want)
	}
	// Within freshAskEvery: no second request; after it, one.
	_, _ = b.GetCurrentResourceVersion(context.Background())
	if _, ok := asked(100 * time.Millisecond); ok {
		t.Fatal("asked twice within freshAskEvery")
	}
	clk.Step(freshAskEvery)
	_, _ = b.GetCurrentResourceVersion(context.Background())
	if _, ok := asked(time.Minute); !ok {
		t.Fatal("no request once freshAskEvery had passed")
	}
}
