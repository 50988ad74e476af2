// Package heaviest keeps values in a list per key (a client address
// prefix) and finds, in constant time, the oldest value of the key holding
// the most. The hub's connection bounds use it to choose which connection
// to close for a new one: the oldest of the prefix holding the most, so
// that a flood from one prefix closes its own connections, not a
// newcomer's from elsewhere.
package heaviest

import "container/list"

// Lists is the lists by key. The zero value is not usable: use New. It
// is not safe for concurrent use.
type Lists struct {
	lists   map[string]*list.List
	byCount map[int]map[string]bool // keys by the length of their list
	most    int
	n       int
}

// New returns empty Lists.
func New() *Lists {
	return &Lists{lists: map[string]*list.List{}, byCount: map[int]map[string]bool{}}
}

func (h *Lists) move(key string, from, to int) {
	if from > 0 {
		delete(h.byCount[from], key)
		if len(h.byCount[from]) == 0 {
			delete(h.byCount, from)
		}
	}
	if to > 0 {
		if h.byCount[to] == nil {
			h.byCount[to] = map[string]bool{}
		}
		h.byCount[to][key] = true
	}
	h.most = max(h.most, to)
	for h.most > 0 && len(h.byCount[h.most]) == 0 {
		h.most--
	}
}

// Push appends v to key's list and returns its element, for Remove.
func (h *Lists) Push(key string, v any) *list.Element {
	l := h.lists[key]
	if l == nil {
		l = list.New()
		h.lists[key] = l
	}
	e := l.PushBack(v)
	h.n++
	h.move(key, l.Len()-1, l.Len())
	return e
}

// Remove takes e, which Push returned for key, out of key's list.
func (h *Lists) Remove(key string, e *list.Element) {
	l := h.lists[key]
	if l == nil {
		return
	}
	l.Remove(e)
	h.n--
	h.move(key, l.Len()+1, l.Len())
	if l.Len() == 0 {
		delete(h.lists, key)
	}
}

// OldestOfHeaviest is the first value of a key holding the most; nil
// when there is none.
func (h *Lists) OldestOfHeaviest() any {
	for key := range h.byCount[h.most] {
		return h.lists[key].Front().Value
	}
	return nil
}

// Len is how many values all lists hold.
func (h *Lists) Len() int { return h.n }
