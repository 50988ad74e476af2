package core

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

var errUndecodable = errors.New("the downstream answered with an undecodable object")

// watchEvent is one event of a JSON watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watchNamespaces serves a namespace watch as a provider-credential watch
// on all namespaces, filtered per event against what the caller may see at
// that moment. Visibility is never frozen at watch start: when it changes
// (a tenant gains an owner, a RoleBinding appears, a namespace is
// relabelled) the stream gets ADDED or DELETED for the namespaces that
// appeared or disappeared from the caller's view.
func (c *Core) watchNamespaces(w http.ResponseWriter, r *http.Request, caller Caller, _ *request.RequestInfo) {
	q := r.URL.Query()
	lsel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("unable to parse labelSelector: "+err.Error()))
		return
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("unable to parse fieldSelector: "+err.Error()))
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, r, apierrors.NewInternalError(errors.New("streaming unsupported")))
		return
	}
	logProviderRead(r, caller)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	accept := jsonAccept(r.Header.Get("Accept"))
	hdr := http.Header{"Accept": []string{accept}}
	resp, err := c.fwd.do(ctx, http.MethodGet, r.URL.Path, r.URL.RawQuery, hdr, nil)
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

	// sent maps the names the client currently believes visible to the
	// last object it got for each (nil when it learnt it from its list).
	sent := map[string]json.RawMessage{}
	rv := q.Get("resourceVersion")
	if rv != "" && rv != "0" && q.Get("sendInitialEvents") != "true" {
		for _, n := range c.visibleNames(c.namespaceView(ctx, caller)) {
			sent[n] = nil
		}
	}
	events := make(chan watchEvent)
	go func() {
		defer close(events)
		dec := json.NewDecoder(resp.Body)
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()

	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	enc := json.NewEncoder(w)
	emit := func(ev watchEvent) bool {
		if err := enc.Encode(&ev); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	matches := func(name string, lbls map[string]string) bool {
		return lsel.Matches(labels.Set(lbls)) && fsel.Matches(fields.Set{"metadata.name": name})
	}
	for {
		changed := c.changed.wait()
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type == "BOOKMARK" || ev.Type == "ERROR" {
				if !emit(ev) {
					return
				}
				continue
			}
			m, ok := objectMeta(ev.Object)
			if !ok {
				continue
			}
			_, wasSent := sent[m.Name]
			vis := c.namespaceView(ctx, caller).visible(m.Name, m.Labels, m.OwnerReferences)
			switch {
			case ev.Type == "DELETED" && wasSent:
				delete(sent, m.Name)
			case ev.Type == "DELETED":
				continue
			case vis && !wasSent:
				ev.Type = "ADDED"
				sent[m.Name] = ev.Object
			case vis:
				if ev.Type == "ADDED" {
					ev.Type = "MODIFIED"
				}
				sent[m.Name] = ev.Object
			case wasSent:
				ev.Type = "DELETED"
				delete(sent, m.Name)
			default:
				continue
			}
			if !emit(ev) {
				return
			}
		case <-changed:
			if !c.resyncWatch(ctx, caller, accept, sent, matches, emit) {
				return
			}
		}
	}
}

// resyncWatch compares the caller's current view with what the client was
// sent and emits the difference.
func (c *Core) resyncWatch(ctx context.Context, caller Caller, accept string, sent map[string]json.RawMessage,
	matches func(string, map[string]string) bool, emit func(watchEvent) bool) bool {
	view := c.namespaceView(ctx, caller)
	now := map[string]bool{}
	for _, n := range c.visibleNames(view) {
		now[n] = true
	}
	for name, last := range sent {
		if now[name] {
			continue
		}
		obj := last
		if obj == nil {
			var err error
			if obj, err = c.fetchForWatch(ctx, name, accept); err != nil {
				obj = json.RawMessage(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"` + name + `"}}`)
			}
		}
		delete(sent, name)
		if !emit(watchEvent{Type: "DELETED", Object: obj}) {
			return false
		}
	}
	for name := range now {
		if _, ok := sent[name]; ok {
			continue
		}
		obj, err := c.fetchForWatch(ctx, name, accept)
		if err != nil {
			continue // gone already, or not yet readable: a later event brings it
		}
		m, ok := objectMeta(obj)
		if !ok || !matches(m.Name, m.Labels) || !view.visible(m.Name, m.Labels, m.OwnerReferences) {
			continue
		}
		sent[name] = obj
		if !emit(watchEvent{Type: "ADDED", Object: obj}) {
			return false
		}
	}
	return true
}

// fetchForWatch reads one namespace as the provider in the watch's
// encoding (a Table for kubectl get -w).
func (c *Core) fetchForWatch(ctx context.Context, name, accept string) (json.RawMessage, error) {
	resp, err := c.fwd.do(ctx, http.MethodGet, "/api/v1/namespaces/"+name, "", http.Header{"Accept": []string{accept}}, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		klog.V(2).InfoS("tenant filter: namespace read for a watch failed", "namespace", name, "code", resp.StatusCode)
		return nil, &unexpectedStatus{code: resp.StatusCode}
	}
	return body, nil
}
