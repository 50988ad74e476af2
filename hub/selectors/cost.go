package selectors

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
)

// Charger is charged for a request's selector evaluation: checks is how
// many terms were evaluated, each against one object or event. hub/fairness
// charges them to the request's tenant.
type Charger interface {
	ChargeSelector(checks int64)
}

type chargerKey struct{}

// WithCharger returns ctx carrying c, which Wrap charges.
func WithCharger(ctx context.Context, c Charger) context.Context {
	return context.WithValue(ctx, chargerKey{}, c)
}

// flushChecks is how many checks a selector counts before it charges
// them: one charge per object would take the tenant's bucket lock for
// each. What is left below it when the request ends is not charged.
const flushChecks = 1 << 12

// watchFlushChecks is a watch's: its events come a few at a time, and at
// flushChecks a watch of one term seeing 175 events a second charged
// them every 23 s, long after its tenant was in debt (eighth outside
// review, T8).
const watchFlushChecks = 64

// ctxEvery is how many objects are matched between looks at the
// request's context.
const ctxEvery = 64

// Wrap returns pred with its selectors counting the terms they evaluate,
// charged to the Charger ctx carries (none: not charged), and matching
// nothing once ctx has ended: a list whose caller went away, or whose
// request timed out, no longer evaluates the rest of its objects (the
// answer is discarded). A predicate without selectors is returned as is.
func Wrap(ctx context.Context, pred storage.SelectionPredicate) storage.SelectionPredicate {
	return wrap(ctx, pred, flushChecks)
}

// WrapWatch is Wrap for a watch, charged more often.
func WrapWatch(ctx context.Context, pred storage.SelectionPredicate) storage.SelectionPredicate {
	return wrap(ctx, pred, watchFlushChecks)
}

func wrap(ctx context.Context, pred storage.SelectionPredicate, flush int64) storage.SelectionPredicate {
	labelTerms, fieldTerms := 0, 0
	if pred.Label != nil && !pred.Label.Empty() {
		reqs, _ := pred.Label.Requirements()
		for _, r := range reqs {
			labelTerms += max(1, len(r.ValuesUnsorted()))
		}
	}
	if pred.Field != nil && !pred.Field.Empty() {
		fieldTerms = len(pred.Field.Requirements())
	}
	if labelTerms == 0 && fieldTerms == 0 {
		return pred
	}
	c := &counter{ctx: ctx, flush: flush}
	c.charger, _ = ctx.Value(chargerKey{}).(Charger)
	if labelTerms > 0 {
		pred.Label = &countingLabels{Selector: pred.Label, c: c, terms: int64(labelTerms)}
	}
	if fieldTerms > 0 {
		pred.Field = &countingFields{Selector: pred.Field, c: c, terms: int64(fieldTerms)}
	}
	return pred
}

// counter is one request's count. A watch's events may be matched from
// a goroutine of the watch cache's, so it is atomic.
type counter struct {
	ctx     context.Context
	charger Charger
	flush   int64 // checks counted between charges
	matched atomic.Int64
	pending atomic.Int64
	stopped atomic.Bool // ctx has ended: nothing is evaluated any more
}

// match counts one evaluation of terms, and reports false when the
// request has ended: it need not be evaluated.
func (c *counter) match(terms int64) bool {
	if c.stopped.Load() {
		return false
	}
	if n := c.matched.Add(1); n%ctxEvery == 0 && c.ctx.Err() != nil {
		c.stopped.Store(true)
		return false
	}
	if c.charger == nil {
		return true
	}
	if p := c.pending.Add(terms); p >= c.flush {
		if c.pending.CompareAndSwap(p, 0) {
			c.charger.ChargeSelector(p)
		}
	}
	return true
}

// Matched reports how many objects or events sel evaluated, when it was
// made by Wrap (for tests).
func Matched(sel any) (int64, bool) {
	switch s := sel.(type) {
	case *countingLabels:
		return s.c.matched.Load(), true
	case *countingFields:
		return s.c.matched.Load(), true
	}
	return 0, false
}

type countingLabels struct {
	labels.Selector
	c     *counter
	terms int64
}

func (s *countingLabels) Matches(l labels.Labels) bool {
	return s.c.match(s.terms) && s.Selector.Matches(l)
}

type countingFields struct {
	fields.Selector
	c     *counter
	terms int64
}

func (s *countingFields) Matches(f fields.Fields) bool {
	return s.c.match(s.terms) && s.Selector.Matches(f)
}
