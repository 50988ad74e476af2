package core

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keepFunc decides, from an object's metadata, whether the caller may see it.
type keepFunc func(m metav1.ObjectMeta) bool

// serveFilteredList answers a list with one provider-credential list whose
// items (or Table rows) the caller may not see are removed. The downstream
// still formats the answer (kind, resourceVersion, Table columns).
func (c *Core) serveFilteredList(w http.ResponseWriter, r *http.Request, caller Caller, keep keepFunc) {
	logProviderRead(r, caller)
	q := r.URL.Query()
	// Rows without their object cannot be judged; ask for the metadata.
	if q.Get("includeObject") == "None" {
		q.Set("includeObject", "Metadata")
	}
	hdr := http.Header{"Accept": []string{jsonAccept(r.Header.Get("Accept"))}, "User-Agent": []string{r.UserAgent()}}
	resp, body, ok := c.fetch(w, r, http.MethodGet, q.Encode(), hdr, nil)
	if !ok {
		return
	}
	if resp.StatusCode == http.StatusOK {
		filtered, err := filterListBody(body, keep)
		if err != nil {
			writeStatus(w, r, apierrors.NewInternalError(err))
			return
		}
		body = filtered
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	copyResponse(w, resp, body)
}

// filterListBody removes the items of a JSON list, or the rows of a
// Table, that keep refuses. Anything it cannot judge is removed.
func filterListBody(body []byte, keep keepFunc) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, errUndecodable
	}
	var kind string
	_ = json.Unmarshal(doc["kind"], &kind)
	field := "items"
	if kind == "Table" {
		field = "rows"
	}
	var elems []json.RawMessage
	if raw, ok := doc[field]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, errUndecodable
		}
	}
	kept := make([]json.RawMessage, 0, len(elems))
	for _, e := range elems {
		var m metav1.ObjectMeta
		if kind == "Table" {
			var row struct {
				Object struct {
					Metadata metav1.ObjectMeta `json:"metadata"`
				} `json:"object"`
			}
			if json.Unmarshal(e, &row) != nil {
				continue
			}
			m = row.Object.Metadata
		} else {
			var it struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if json.Unmarshal(e, &it) != nil {
				continue
			}
			m = it.Metadata
		}
		if m.Name != "" && keep(m) {
			kept = append(kept, e)
		}
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc[field] = raw
	return json.Marshal(doc)
}

// serveFilteredWatch serves a watch with the provider's credential,
// passing on only the events for objects keep allows (judged per event).
func (c *Core) serveFilteredWatch(w http.ResponseWriter, r *http.Request, caller Caller, keep keepFunc) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, r, apierrors.NewInternalError(errors.New("streaming unsupported")))
		return
	}
	logProviderRead(r, caller)
	hdr := http.Header{"Accept": []string{jsonAccept(r.Header.Get("Accept"))}}
	resp, err := c.fwd.do(r.Context(), http.MethodGet, r.URL.Path, r.URL.RawQuery, hdr, nil)
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the downstream cluster is unavailable"))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		copyResponse(w, resp, body)
		return
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	dec := json.NewDecoder(resp.Body)
	enc := json.NewEncoder(w)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			return
		}
		if ev.Type != "BOOKMARK" && ev.Type != "ERROR" {
			m, ok := objectMeta(ev.Object)
			if !ok || !keep(m) {
				continue
			}
		}
		if err := enc.Encode(&ev); err != nil {
			return
		}
		flusher.Flush()
	}
}
