package heaviest

import "testing"

// The oldest value of the key holding the most, as keys grow and shrink.
func TestLists(t *testing.T) {
	h := New()
	if v := h.OldestOfHeaviest(); v != nil {
		t.Fatalf("empty: %v", v)
	}
	a1 := h.Push("a", "a1")
	h.Push("b", "b1")
	h.Push("b", "b2")
	for _, step := range []struct {
		do   func()
		want any
		n    int
	}{
		{func() {}, "b1", 3},
		{func() { h.Push("a", "a2"); h.Push("a", "a3") }, "a1", 5},
		{func() { h.Remove("a", a1) }, nil, 4}, // a and b hold two each: either's oldest
		{func() { h.Push("b", "b3") }, "b1", 5},
	} {
		step.do()
		got := h.OldestOfHeaviest()
		if step.want != nil && got != step.want {
			t.Fatalf("oldest of heaviest %v, want %v", got, step.want)
		}
		if step.want == nil && got != "a2" && got != "b1" {
			t.Fatalf("oldest of heaviest %v, want a2 or b1", got)
		}
		if h.Len() != step.n {
			t.Fatalf("len %d, want %d", h.Len(), step.n)
		}
	}
}
