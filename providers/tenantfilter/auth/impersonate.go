package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// impersonation is what a client asked for with Impersonate-* headers.
type impersonation struct {
	user   string
	uid    string
	groups []string
	extra  bool // Impersonate-Extra-* was sent (always dropped)
}

func (i impersonation) requested() bool {
	return i.user != "" || i.uid != "" || len(i.groups) > 0
}

// takeImpersonation removes every Impersonate-* header (any spelling of the
// name) and returns what they asked for.
func takeImpersonation(h http.Header) impersonation {
	var imp impersonation
	for k, vs := range h {
		if !hasPrefixFold(k, "Impersonate-") {
			continue
		}
		switch textproto.CanonicalMIMEHeaderKey(k) {
		case authenticationv1.ImpersonateUserHeader:
			if len(vs) > 0 {
				imp.user = vs[0]
			}
		case authenticationv1.ImpersonateUIDHeader:
			if len(vs) > 0 {
				imp.uid = vs[0]
			}
		case authenticationv1.ImpersonateGroupHeader:
			imp.groups = append(imp.groups, vs...)
		default:
			if hasPrefixFold(k, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
				imp.extra = true
			}
		}
		delete(h, k)
	}
	return imp
}

// impersonationReviewer checks client impersonation as kube-apiserver's
// impersonation filter does, with SubjectAccessReviews on the downstream.
type impersonationReviewer struct {
	sars authzv1client.SubjectAccessReviewInterface
	skip bool // SkipImpersonationReview
}

// resolve returns the identity the request runs as: the impersonated one
// when every review allows it, else the authenticated caller unchanged.
// A denial strips rather than refuses (capsule-proxy's documented
// behaviour): the downstream then judges the caller's own rights.
func (ir *impersonationReviewer) resolve(ctx context.Context, caller core.Caller, imp impersonation) (core.Caller, error) {
	if !imp.requested() {
		return caller, nil
	}
	// kube-apiserver refuses groups or a uid without a user; stripping them
	// leaves the caller as they are.
	if imp.user == "" {
		klog.FromContext(ctx).Info("client impersonation without a user stripped", "user", caller.User)
		return caller, nil
	}
	if !ir.skip {
		ok, err := ir.allowed(ctx, caller, imp)
		if err != nil {
			return core.Caller{}, err
		}
		if !ok {
			klog.FromContext(ctx).Info("client impersonation not allowed, stripped",
				"user", caller.User, "impersonateUser", imp.user, "impersonateGroups", imp.groups)
			return caller, nil
		}
	}
	out := core.Caller{User: imp.user, UID: imp.uid, Groups: slices.Clone(imp.groups)}
	// Like kube-apiserver: a service account gets its implied groups, and
	// every impersonated user except anonymous is authenticated.
	if ns, _, err := serviceaccount.SplitUsername(imp.user); err == nil {
		out.Groups = appendMissing(out.Groups, serviceaccount.AllServiceAccountsGroup, serviceaccount.MakeNamespaceGroupName(ns))
	}
	if imp.user != user.Anonymous {
		out.Groups = appendMissing(out.Groups, user.AllAuthenticated)
	}
	klog.FromContext(ctx).V(2).Info("client impersonation honoured", "user", caller.User, "as", out.User, "groups", out.Groups)
	return out, nil
}

func (ir *impersonationReviewer) allowed(ctx context.Context, caller core.Caller, imp impersonation) (bool, error) {
	var attrs []authorizationv1.ResourceAttributes
	if ns, name, err := serviceaccount.SplitUsername(imp.user); err == nil {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name})
	} else {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: imp.user})
	}
	for _, g := range imp.groups {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: g})
	}
	if imp.uid != "" {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Verb: "impersonate", Group: "authentication.k8s.io", Resource: "uids", Name: imp.uid})
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range caller.Extra {
		extra[k] = v
	}
	for i := range attrs {
		sar, err := ir.sars.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: caller.User, UID: caller.UID, Groups: caller.Groups, Extra: extra,
			ResourceAttributes: &attrs[i],
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, errReview{fmt.Errorf("impersonation review: %w", err)}
		}
		if !sar.Status.Allowed || sar.Status.Denied {
			return false, nil
		}
	}
	return true, nil
}

// dropConnectionNamed deletes every header named in Connection. A proxy
// removes those as hop-by-hop after its director has run, so
// "Connection: Impersonate-User" would erase the identity the core sets.
// Upgrade alone is kept (with "Connection: Upgrade"), because websockets and
// SPDY need it and the core's reverse proxy handles it itself.
func dropConnectionNamed(h http.Header) {
	upgrade := false
	for _, v := range h.Values("Connection") {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				continue
			}
			if strings.EqualFold(tok, "Upgrade") {
				upgrade = true
				continue
			}
			for k := range h {
				if strings.EqualFold(k, tok) {
					delete(h, k)
				}
			}
		}
	}
	h.Del("Connection")
	if upgrade {
		h.Set("Connection", "Upgrade")
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func appendMissing(groups []string, add ...string) []string {
	for _, g := range add {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return groups
}

// StripClientHeaders removes what a client must never get through to the
// downstream when identity was established elsewhere (plugin mode, where
// the hub authenticated the caller): its credentials (Authorization, XFCC,
// the websocket bearer subprotocol), every Impersonate-* header, and
// every header named in Connection. client-go's bearer round tripper keeps
// an Authorization header it finds, so leaving the caller's would send the
// caller's hub token downstream instead of the provider's credential.
func StripClientHeaders(h http.Header) {
	dropConnectionNamed(h)
	stripCredentials(h, DefaultXFCCHeader)
	_ = takeImpersonation(h)
}
