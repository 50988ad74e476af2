package rules

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ErrCannotCombine says the applicable selectors of a LIST cannot be
// combined into one without widening access; the core answers BadRequest.
var ErrCannotCombine = errors.New("the GlobalProxySettings rules that apply to this list cannot be combined into one label selector")

// requirement is a normalised label requirement: "=" and "==" are folded
// into "in" with one value, values sorted and deduplicated, so that
// matchLabels {a: x} and matchExpressions [a In (x)] compare equal.
type requirement struct {
	key    string
	op     selection.Operator
	values []string
}

func (r requirement) String() string {
	return r.key + " " + string(r.op) + " (" + strings.Join(r.values, ",") + ")"
}

// normalized is a selector as a sorted list of requirements.
type normalized []requirement

// normalize converts a LabelSelector; an invalid one is an error (the rule
// then grants nothing).
func normalize(ls *metav1.LabelSelector) (normalized, error) {
	if ls == nil {
		return nil, &InvalidEntry{Reason: ReasonInvalidSelector, Message: "a selector is required"}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, &InvalidEntry{Reason: ReasonInvalidSelector, Message: err.Error(), Err: err}
	}
	reqs, _ := sel.Requirements()
	out := make(normalized, 0, len(reqs))
	for _, r := range reqs {
		op := r.Operator()
		if op == selection.Equals || op == selection.DoubleEquals {
			op = selection.In
		}
		vals := r.Values().List()
		out = append(out, requirement{key: r.Key(), op: op, values: vals})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func (n normalized) key() string {
	parts := make([]string, len(n))
	for i, r := range n {
		parts[i] = r.String()
	}
	return strings.Join(parts, ";")
}

// selector builds the labels.Selector the normalised form stands for.
func (n normalized) selector() (labels.Selector, error) {
	sel := labels.NewSelector()
	for _, r := range n {
		req, err := labels.NewRequirement(r.key, r.op, r.values)
		if err != nil {
			return nil, fmt.Errorf("requirement %s: %w", r, err)
		}
		sel = sel.Add(*req)
	}
	return sel, nil
}

// combine merges the applicable selectors of a LIST into one:
//   - identical selectors combine;
//   - selectors that differ only in the value set of one positive
//     requirement (In, or an equality) on the same key merge its values
//     ("tenant in (a)" + "tenant in (b)" → "tenant in (a,b)");
//   - anything else is ErrCannotCombine.
//
// The second case is exact: the union of {K in A, rest} and {K in B, rest}
// is {K in A∪B, rest}, so the merged selector selects nothing either rule
// would not.
func combine(sels []normalized) (normalized, error) {
	uniq := map[string]normalized{}
	var order []string
	for _, s := range sels {
		k := s.key()
		if _, ok := uniq[k]; !ok {
			uniq[k] = s
			order = append(order, k)
		}
	}
	if len(order) == 0 {
		return nil, errors.New("no selector applies")
	}
	first := uniq[order[0]]
	if len(order) == 1 {
		return first, nil
	}
	diff := -1
	for _, k := range order[1:] {
		s := uniq[k]
		if len(s) != len(first) {
			return nil, ErrCannotCombine
		}
		for i := range s {
			if s[i].key != first[i].key || s[i].op != first[i].op {
				return nil, ErrCannotCombine
			}
			if slices.Equal(s[i].values, first[i].values) {
				continue
			}
			if s[i].op != selection.In || (diff >= 0 && diff != i) {
				return nil, ErrCannotCombine
			}
			diff = i
		}
	}
	if diff < 0 {
		// Cannot happen after deduplication, but fail closed.
		return nil, ErrCannotCombine
	}
	merged := slices.Clone(first)
	vals := sets.New[string]()
	for _, k := range order {
		vals.Insert(uniq[k][diff].values...)
	}
	merged[diff] = requirement{key: first[diff].key, op: selection.In, values: sets.List(vals)}
	return merged, nil
}
