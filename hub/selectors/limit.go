package selectors

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// The query parameters that carry a selector (metav1.ListOptions).
var params = [...]string{"labelSelector", "fieldSelector"}

// Defaults of the bounds. Ordinary selectors have a few terms (kubectl
// -l app=web,tier!=cache); a thousand leaves room for generated set
// selectors (name in (...)) while its parse stays near a millisecond.
const (
	DefaultMaxTerms = 1000
	DefaultMaxBytes = 64 << 10
)

// Limit bounds the selectors of one request; a zero field does not bound.
type Limit struct {
	MaxTerms int
	MaxBytes int
}

// NewLimit returns the default bounds.
func NewLimit() *Limit { return &Limit{MaxTerms: DefaultMaxTerms, MaxBytes: DefaultMaxBytes} }

// AddFlags registers the bounds' flags.
func (l *Limit) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&l.MaxTerms, "max-selector-terms", l.MaxTerms,
		"Most comma-separated terms (requirements, and the values of set-based ones) of a request's labelSelector or fieldSelector; "+
			"more is refused with 400 BadRequest before it is parsed. Applies to every caller. 0 means no bound.")
	fs.IntVar(&l.MaxBytes, "max-selector-bytes", l.MaxBytes,
		"Most bytes (decoded) of a request's labelSelector or fieldSelector; more is refused with 400 BadRequest before it is parsed. "+
			"Applies to every caller. 0 means no bound.")
}

// Validate reports invalid bounds.
func (l *Limit) Validate() []error {
	if l.MaxTerms < 0 || l.MaxBytes < 0 {
		return []error{fmt.Errorf("--max-selector-terms and --max-selector-bytes must not be negative")}
	}
	return nil
}

// Terms counts a selector's terms: its comma-separated parts, so a set
// requirement counts once per value, as its evaluation compares each.
// An empty selector has none.
func Terms(selector string) int {
	if strings.TrimSpace(selector) == "" {
		return 0
	}
	return strings.Count(selector, ",") + 1
}

// QueryTerms counts the terms of every selector in an already parsed
// query.
func QueryTerms(q url.Values) int {
	n := 0
	for _, p := range params {
		for _, s := range q[p] {
			n += Terms(s)
		}
	}
	return n
}

// check returns the error for a selector value (raw, still escaped) of
// param over the bounds, nil when within. It counts without decoding: a
// term separator is "," or its escape %2C; each escape is three bytes
// of one.
func (l *Limit) check(param, raw string) error {
	escapes := strings.Count(raw, "%")
	if l.MaxTerms > 0 && strings.Trim(raw, " +") != "" {
		terms := strings.Count(raw, ",") + 1
		if escapes > 0 {
			terms += strings.Count(raw, "%2C") + strings.Count(raw, "%2c")
		}
		if terms > l.MaxTerms {
			return apierrors.NewBadRequest(fmt.Sprintf("%s has %d terms, more than the %d terms this server allows", param, terms, l.MaxTerms))
		}
	}
	if size := len(raw) - 2*escapes; l.MaxBytes > 0 && size > l.MaxBytes {
		return apierrors.NewBadRequest(fmt.Sprintf("%s is %d bytes long, more than the %d bytes this server allows", param, size, l.MaxBytes))
	}
	return nil
}

// strip returns raw without its selectors over the bounds, and the
// error for the first of them (nil: raw is returned as is). A pair the
// query parser skips (a semicolon, a bad escape in its name) is kept: it
// is skipped downstream too.
func (l *Limit) strip(raw string) (string, error) {
	var first error
	var kept []string
	rest := raw
	for i := 0; rest != ""; i++ {
		pair, tail, _ := strings.Cut(rest, "&")
		rest = tail
		name, value, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(name, "%+") {
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
		}
		var err error
		if (name == params[0] || name == params[1]) && !strings.Contains(pair, ";") {
			err = l.check(name, value)
		}
		if err == nil {
			if first != nil {
				kept = append(kept, pair)
			}
			continue
		}
		if first == nil {
			first = err
			// Every pair before this one is kept.
			kept = append(kept, strings.Split(raw, "&")[:i]...)
		}
	}
	if first == nil {
		return raw, nil
	}
	return strings.Join(kept, "&"), first
}

type refusalKey struct{}

// WithLimit takes out of a request's query every selector over the
// bounds, before upstream's request-info filter, which parses a list's or
// watch's selectors before authentication, can parse it; WithRefusal,
// inside authentication and authorization, then answers the request 400
// BadRequest. So a refused selector is never parsed, and the request is
// authenticated, counted and charged to its tenant (its head's bytes,
// hub/fairness) like any other: answered before authentication, it would
// be free to send again and again (fifth review, #18). WithLimit must
// wrap hub/fairness's WithState, which reads the query it leaves.
func (l *Limit) WithLimit(handler http.Handler) http.Handler {
	if l == nil || (l.MaxTerms == 0 && l.MaxBytes == 0) {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" {
			handler.ServeHTTP(w, r)
			return
		}
		query, err := l.strip(r.URL.RawQuery)
		if err == nil {
			handler.ServeHTTP(w, r)
			return
		}
		u := *r.URL
		u.RawQuery = query
		r = r.WithContext(context.WithValue(r.Context(), refusalKey{}, err))
		r.URL = &u
		handler.ServeHTTP(w, r)
	})
}

// WithRefusal answers 400 BadRequest, as kube-apiserver answers a
// selector it cannot parse, to a request whose selector WithLimit took
// out. It belongs inside authorization, where kube-apiserver's handler
// would have parsed the selector.
func WithRefusal(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err, ok := r.Context().Value(refusalKey{}).(error); ok {
			gv := schema.GroupVersion{}
			if info, ok := request.RequestInfoFrom(r.Context()); ok {
				gv = schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
			}
			responsewriters.ErrorNegotiated(err, s, gv, w, r)
			return
		}
		handler.ServeHTTP(w, r)
	})
}
