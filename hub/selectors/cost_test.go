package selectors

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
)

type charged struct{ checks int64 }

func (c *charged) ChargeSelector(n int64) { c.checks += n }

func pred(t *testing.T, label, field string) storage.SelectionPredicate {
	t.Helper()
	l, err := labels.Parse(label)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fields.ParseSelector(field)
	if err != nil {
		t.Fatal(err)
	}
	return storage.SelectionPredicate{Label: l, Field: f}
}

func TestWrapCharges(t *testing.T) {
	parts := make([]string, 100)
	for i := range parts {
		parts[i] = fmt.Sprintf("!k%d", i)
	}
	c := &charged{}
	p := Wrap(WithCharger(context.Background(), c), pred(t, strings.Join(parts, ",")+",v in (a,b)", "metadata.name!=x"))
	set := labels.Set{"v": "a"}
	for range 1000 {
		if !p.MatchesObjectAttributes(set, fields.Set{"metadata.name": "y"}) {
			t.Fatal("the wrapped selector does not match what it should")
		}
	}
	// 102 label terms and 1 field term, 1000 objects: what is past the
	// last flush is not charged.
	if want := int64(103 * 1000); c.checks > want || c.checks < want-2*flushChecks {
		t.Errorf("charged %d checks, want about %d", c.checks, want)
	}
	if n, ok := Matched(p.Label); !ok || n != 2000 {
		t.Errorf("matched %d (%v), want 2000 (labels and fields share one count)", n, ok)
	}
}

func TestWrapStopsWithTheRequest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Wrap(ctx, pred(t, "!a", ""))
	cancel()
	matched := 0
	for range 10 * ctxEvery {
		if p.MatchesObjectAttributes(labels.Set{}, fields.Set{}) {
			matched++
		}
	}
	if matched >= ctxEvery {
		t.Errorf("%d objects matched after the request ended, want fewer than %d", matched, ctxEvery)
	}
}

func TestWrapLeavesEmptyPredicates(t *testing.T) {
	p := Wrap(context.Background(), storage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything()})
	if _, ok := Matched(p.Label); ok {
		t.Error("an empty selector was wrapped")
	}
}
