package fairness

import "container/list"

// heaviest keeps values in a list per key and finds, in constant time,
// the oldest value of the key holding the most.
type heaviest struct {
	lists   map[string]*list.List
	byCount map[int]map[string]bool // keys by the length of their list
	most    int
}

func newHeaviest() heaviest {
	return heaviest{lists: map[string]*list.List{}, byCount: map[int]map[string]bool{}}
}

func (h *heaviest) move(key string, from, to int) {
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

func (h *heaviest) push(key string, v any) *list.Element {
	l := h.lists[key]
	if l == nil {
		l = list.New()
		h.lists[key] = l
	}
	e := l.PushBack(v)
	h.move(key, l.Len()-1, l.Len())
	return e
}

func (h *heaviest) remove(key string, e *list.Element) {
	l := h.lists[key]
	if l == nil {
		return
	}
	l.Remove(e)
	h.move(key, l.Len()+1, l.Len())
	if l.Len() == 0 {
		delete(h.lists, key)
	}
}

func (h *heaviest) oldestOfHeaviest() any {
	for key := range h.byCount[h.most] {
		return h.lists[key].Front().Value
	}
	return nil
}
