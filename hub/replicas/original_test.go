package replicas

import (
	"testing"
	"time"
)

// TestAssertionOriginalPath: an aggregated hop's original path is bound:
// the holder refuses an assertion for another original path, for none, or
// a backend assertion presented with one.
func TestAssertionOriginalPath(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	signer := newAsserter(t, "hub-a", secretA, now)
	agg := bind
	agg.OriginalPath = "/clusters/root:acme/apis/probe.example.com/v1/probes"
	for _, c := range []struct {
		name         string
		signed, seen Binding
		ok           bool
	}{
		{"same original path", agg, agg, true},
		{"another original path", agg, Binding{Provider: agg.Provider, Method: agg.Method, Path: agg.Path, Query: agg.Query, OriginalPath: "/clusters/root/apis/x"}, false},
		{"original path dropped", agg, bind, false},
		{"original path added to a backend hop", bind, agg, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := signer.Sign("hub-b", c.signed, alice)
			if err != nil {
				t.Fatal(err)
			}
			_, err = newAsserter(t, "hub-b", secretA, now).Verify(v, c.seen)
			if (err == nil) != c.ok {
				t.Errorf("verify: %v, want ok=%v", err, c.ok)
			}
		})
	}
}
