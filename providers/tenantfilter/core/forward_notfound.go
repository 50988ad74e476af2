package core

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// notFoundCandidate is a forbidden-able GET that create-if-missing clients
// (Helm's --create-namespace) probe: if the namespace does not exist, the
// 403 tells them nothing true, and a 404 lets them go on to create it.
type notFoundCandidate struct {
	gr        schema.GroupResource
	namespace string
	name      string
}

// notFoundCandidateFor applies the rule's static part: HTTP GET of one named
// object in a namespace, not a collection, subresource or watch, and not in
// a system namespace (those keep their 403).
func notFoundCandidateFor(r *http.Request, info *request.RequestInfo) *notFoundCandidate {
	if r.Method != http.MethodGet || !info.IsResourceRequest || info.Verb != "get" ||
		info.Namespace == "" || info.Name == "" || info.Subresource != "" || info.Resource == "namespaces" ||
		isSystemNamespace(info.Namespace) || isWatchParam(r.URL.Query().Get("watch")) {
		return nil
	}
	return &notFoundCandidate{
		gr:        schema.GroupResource{Group: info.APIGroup, Resource: info.Resource},
		namespace: info.Namespace,
		name:      info.Name,
	}
}

// isWatchParam: a named GET asking to watch is a watch, whatever the
// request info says, and never rewritten.
func isWatchParam(v string) bool { return v != "" && v != "false" && v != "0" }

func isSystemNamespace(ns string) bool {
	return ns == "default" || strings.HasPrefix(ns, "kube-")
}

// namespaceLookupTimeout bounds the authoritative lookup; on timeout the
// 403 stands.
const namespaceLookupTimeout = 10 * time.Second

// maybeNotFound turns resp (a 403) into a 404 when an authoritative lookup
// with the provider's credential finds the namespace missing. Anything
// else, including a failed lookup, keeps the 403 (fail closed).
func (c *Core) maybeNotFound(resp *http.Response, nf *notFoundCandidate) error {
	ctx, cancel := context.WithTimeout(resp.Request.Context(), namespaceLookupTimeout)
	defer cancel()
	missing, err := c.namespaceMissing(ctx, nf.namespace)
	if err != nil {
		klog.V(1).InfoS("tenant filter: namespace lookup failed; keeping 403", "namespace", nf.namespace, "err", err)
		return nil
	}
	if !missing {
		return nil
	}
	st := apierrors.NewNotFound(nf.gr, nf.name).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	body, err := json.Marshal(&st)
	if err != nil {
		return nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	resp.StatusCode = http.StatusNotFound
	resp.Status = strconv.Itoa(http.StatusNotFound) + " " + http.StatusText(http.StatusNotFound)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	return nil
}

// namespaceMissing asks the downstream (not the cache, which may lag) as
// the provider whether a namespace exists.
func (c *Core) namespaceMissing(ctx context.Context, ns string) (bool, error) {
	hdr := http.Header{"Accept": []string{"application/json"}}
	resp, err := c.fwd.do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns, "", hdr, nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return false, nil
	case http.StatusNotFound:
		return true, nil
	}
	return false, &unexpectedStatus{code: resp.StatusCode}
}

type unexpectedStatus struct{ code int }

func (e *unexpectedStatus) Error() string { return "unexpected status " + strconv.Itoa(e.code) }
