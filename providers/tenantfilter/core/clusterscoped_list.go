package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// tableAccept asks the downstream for a JSON Table (kubectl's default for
// `get`), with a plain list as the fallback it understands.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// wantsTable: the client asked for a server-side printed Table.
func wantsTable(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "as=Table")
}

// serveGrantedList answers a LIST with the objects the grant's filter
// keeps. A plain list comes from the informer (no downstream call); a Table
// is printed by the downstream (the provider cannot print kube's columns
// itself) and its rows filtered against the cached objects, one call.
func (c *Core) serveGrantedList(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo, ri ResourceInfo, keep func(rules.Object) bool) {
	l, err := c.cache.Lister(r.Context(), ri.GVR)
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the tenant filter's caches are not ready"))
		return
	}
	byName := func(name string) (*unstructured.Unstructured, bool) {
		o, err := l.Get(name)
		if err != nil {
			return nil, false
		}
		return asUnstructured(o)
	}
	if wantsTable(r) {
		c.serveGrantedTable(w, r, caller, byName, keep)
		return
	}
	q := r.URL.Query()
	lsel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err)))
		return
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err)))
		return
	}
	objs, err := l.List(lsel)
	if err != nil {
		writeStatus(w, r, apierrors.NewServiceUnavailable("the tenant filter's caches are not ready"))
		return
	}
	logProviderRead(r, caller)
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		u, ok := asUnstructured(o)
		if !ok || !fieldsMatch(fsel, u) || !keep(ruleObject(u)) {
			continue
		}
		u = u.DeepCopy()
		if u.GetAPIVersion() == "" {
			u.SetAPIVersion(ri.GVR.GroupVersion().String())
			u.SetKind(ri.Kind)
		}
		items = append(items, u.Object)
	}
	list := map[string]any{
		"apiVersion": ri.GVR.GroupVersion().String(),
		"kind":       ri.Kind + "List",
		"metadata":   map[string]any{"resourceVersion": ""},
		"items":      items,
	}
	writeJSON(w, r, http.StatusOK, "application/json", list)
}

// fieldsMatch evaluates a field selector on an object: metadata.name and
// metadata.namespace directly, any other field by its path.
func fieldsMatch(sel fields.Selector, u *unstructured.Unstructured) bool {
	if sel.Empty() {
		return true
	}
	set := fields.Set{}
	for _, req := range sel.Requirements() {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, strings.Split(req.Field, ".")...)
		if v == nil {
			set[req.Field] = ""
		} else {
			set[req.Field] = fmt.Sprint(v)
		}
	}
	return sel.Matches(set)
}

// serveGrantedTable fetches the Table with the provider's credential and
// keeps the rows whose object the grant keeps. A row is judged on the
// cached object (a PersistentVolume's claimRef is not in the row); a row
// with no cached object is judged on its metadata alone.
func (c *Core) serveGrantedTable(w http.ResponseWriter, r *http.Request, caller Caller, byName func(string) (*unstructured.Unstructured, bool), keep func(rules.Object) bool) {
	out := r.Clone(r.Context())
	// The whole Table in one page: rows are dropped here, so a page and
	// its continue token would no longer line up.
	q := out.URL.Query()
	q.Del("limit")
	q.Del("continue")
	out.URL.RawQuery = q.Encode()
	out.Header.Set("Accept", tableAccept)
	// Ask for an uncompressed body: it is rewritten here.
	out.Header.Del("Accept-Encoding")
	rec := newCapture()
	c.forwardAsProvider(rec, out, caller)
	var table metav1.Table
	if rec.code != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &table) != nil || table.Kind != "Table" {
		rec.replay(w)
		return
	}
	rows := table.Rows[:0]
	for _, row := range table.Rows {
		var meta metav1.PartialObjectMetadata
		if json.Unmarshal(row.Object.Raw, &meta) != nil || meta.Name == "" {
			continue
		}
		obj := rules.Object{Name: meta.Name, Labels: meta.Labels}
		if u, ok := byName(meta.Name); ok {
			obj = ruleObject(u)
		}
		if keep(obj) {
			rows = append(rows, row)
		}
	}
	table.Rows = rows
	table.Continue = ""
	ct := rec.header.Get("Content-Type")
	if ct == "" {
		ct = "application/json;as=Table;v=v1;g=meta.k8s.io"
	}
	writeJSON(w, r, http.StatusOK, ct, &table)
}

// writeObject writes one cached object as JSON.
func writeObject(w http.ResponseWriter, r *http.Request, u *unstructured.Unstructured) {
	writeJSON(w, r, http.StatusOK, "application/json", u.Object)
}

func writeJSON(w http.ResponseWriter, r *http.Request, code int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, r, fmt.Errorf("encode the answer: %w", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// capture is a ResponseWriter that keeps a downstream answer for rewriting.
type capture struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func newCapture() *capture { return &capture{header: http.Header{}} }

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return c.body.Write(p)
}

// replay sends the captured answer unchanged.
func (c *capture) replay(w http.ResponseWriter) {
	for k, v := range c.header {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		w.Header()[k] = v
	}
	if c.code == 0 {
		c.code = http.StatusOK
	}
	w.Header().Set("Content-Length", strconv.Itoa(c.body.Len()))
	w.WriteHeader(c.code)
	_, _ = w.Write(c.body.Bytes())
}
