package buckets

import (
	"strconv"
	"testing"
)

// A key's value is made once and found again; past the size, the least
// recently used key is forgotten and starts fresh; Peek never adds.
func TestKeyed(t *testing.T) {
	made := 0
	k := New(2, func() *int { made++; return new(int) })
	if k.Peek("a", func(*int) { t.Error("Peek ran on an empty store") }) || k.Len() != 0 {
		t.Fatalf("an empty store held a: %d held", k.Len())
	}
	k.Do("a", func(v *int) { *v = 1 })
	k.Do("a", func(v *int) { *v++ })
	if !k.Peek("a", func(v *int) {
		if *v != 2 {
			t.Errorf("a = %d, want 2", *v)
		}
	}) {
		t.Fatal("a not held")
	}
	if k.Peek("b", func(*int) {}) || k.Len() != 1 {
		t.Fatalf("Peek added a key: %d held", k.Len())
	}
	for i := range 3 {
		k.Do(strconv.Itoa(i), func(*int) {})
	}
	if k.Len() != 2 || k.Peek("a", func(*int) {}) {
		t.Fatalf("%d held, a held: the oldest must be forgotten", k.Len())
	}
	if made != 4 {
		t.Fatalf("%d values made, want 4", made)
	}
}
