package resourceproxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// maxDiscovery bounds a target's discovery document.
const maxDiscovery = 4 << 20

// serveGroup answers /apis/<group> from the routes: the client workspace's
// view of the group is exactly the versions it routes.
func (h *Handler) serveGroup(w http.ResponseWriter, cluster, group string) bool {
	routes := h.routes.Group(cluster, group)
	if len(routes) == 0 {
		return false
	}
	var versions []metav1.GroupVersionForDiscovery
	for _, r := range routes {
		versions = append(versions, metav1.GroupVersionForDiscovery{GroupVersion: r.GroupVersion(), Version: r.Version})
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].Version < versions[j].Version })
	writeJSON(w, http.StatusOK, &metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     group, Versions: versions, PreferredVersion: versions[0],
	})
	return true
}

// serveDiscovery answers /apis/<group>/<version>: the target's own
// document when it answers 200, else the local fallback, so the client
// workspace's discovery stays healthy while the target is away (401, 404,
// 5xx or unreachable). Other answers (403) pass through.
func (h *Handler) serveDiscovery(w http.ResponseWriter, r *http.Request, route *Route, conn *targetConn, user string) {
	reason := ""
	if conn == nil {
		reason = reasonError
	} else {
		out, err := http.NewRequestWithContext(r.Context(), http.MethodGet, conn.url("/apis/"+route.GroupVersion(), "").String(), nil)
		if err != nil {
			reason = reasonError
		} else {
			out.Header.Set("Accept", "application/json")
			out.Header.Set("Impersonate-User", user)
			resp, err := conn.roundTrip(out)
			switch {
			case err != nil:
				reason = errReason(r, err)
			case resp.StatusCode == http.StatusOK:
				defer resp.Body.Close()
				b, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscovery))
				if err == nil && json.Valid(b) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					_, _ = w.Write(b)
					return
				}
				reason = reasonUpstreamError
			case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusNotFound || resp.StatusCode >= 500,
				hiddenAnswer(route, resp):
				// A workspace target the client cannot reach falls back
				// as a missing one does (hidden.go).
				_ = resp.Body.Close()
				reason = reasonUpstream
			default:
				defer resp.Body.Close()
				copyResponse(w, resp, false)
				return
			}
		}
	}
	h.metrics.fallbacks.WithLabelValues(route.Target.Name(), route.GroupVersion(), reason).Inc()
	klog.V(2).InfoS("resource proxy: discovery fallback", "target", route.Target.Name(), "groupVersion", route.GroupVersion(), "reason", reason, "peer", peerOf(conn))
	writeJSON(w, http.StatusOK, fallbackResources(route))
}

// fallbackResources is the discovery the spec prescribes without the
// target: explicit entries as namespaced, get only, singular and kind
// derived from the plural; a wildcard entry lists nothing.
func fallbackResources(route *Route) *metav1.APIResourceList {
	l := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: route.GroupVersion(),
		APIResources: []metav1.APIResource{},
	}
	if route.Wildcard {
		return l
	}
	for _, plural := range route.Resources {
		s := Singular(plural)
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: plural, SingularName: s, Namespaced: true, Kind: kindOf(s), Verbs: metav1.Verbs{"get"},
		})
	}
	return l
}

// Singular derives a singular from an English plural the way CRD names
// usually pair: policies→policy, classes→class, boxes→box, databases→database.
func Singular(plural string) string {
	switch {
	case strings.HasSuffix(plural, "ies") && len(plural) > 3:
		return plural[:len(plural)-3] + "y"
	case strings.HasSuffix(plural, "sses"), strings.HasSuffix(plural, "xes"),
		strings.HasSuffix(plural, "ches"), strings.HasSuffix(plural, "shes"), strings.HasSuffix(plural, "zes"):
		return plural[:len(plural)-2]
	case strings.HasSuffix(plural, "s") && !strings.HasSuffix(plural, "ss") && len(plural) > 1:
		return plural[:len(plural)-1]
	}
	return plural
}

func kindOf(singular string) string {
	if singular == "" {
		return ""
	}
	return strings.ToUpper(singular[:1]) + singular[1:]
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// errReason maps a round-trip error to the reason vocabulary.
func errReason(r *http.Request, err error) string {
	var ue *unavailableError
	var de *dialError
	switch {
	case errors.As(err, &ue):
		return ue.reason
	case errors.As(err, &de):
		return de.reason
	case errors.Is(context.Cause(r.Context()), errDeadline):
		return reasonDeadline
	case r.Context().Err() != nil:
		return reasonCanceled
	}
	return reasonUpstreamError
}

func peerOf(c *targetConn) string {
	if c == nil {
		return ""
	}
	return strings.Join(c.peers.Hosts(), ",")
}
