package auth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	authv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// Type is one of capsule-proxy's --auth-preferred-types values.
type Type string

const (
	BearerToken          Type = "BearerToken"
	TLSCertificate       Type = "TLSCertificate"
	XForwardedClientCert Type = "XForwardedClientCert"
)

// DefaultTypes is capsule-proxy's default order.
var DefaultTypes = []Type{TLSCertificate, BearerToken}

// ParseTypes validates --auth-preferred-types values (case-sensitive, as
// capsule-proxy's enum flag); duplicates keep their first position.
func ParseTypes(vals []string) ([]Type, error) {
	var out []Type
	for _, v := range vals {
		t := Type(strings.TrimSpace(v))
		switch t {
		case BearerToken, TLSCertificate, XForwardedClientCert:
		default:
			return nil, fmt.Errorf("unknown authentication type %q (want BearerToken, TLSCertificate or XForwardedClientCert)", v)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// ParseCIDRs parses --trusted-proxy-cidrs.
func ParseCIDRs(vals []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range vals {
		p, err := netip.ParsePrefix(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("trusted proxy CIDR %q: %w", v, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Config configures an Authenticator.
type Config struct {
	// Types in the order they are tried; empty means DefaultTypes.
	Types []Type
	// TokenReviews and SubjectAccessReviews are the downstream's, used with
	// the provider's own credential.
	TokenReviews         authv1client.TokenReviewInterface
	SubjectAccessReviews authzv1client.SubjectAccessReviewInterface
	// ClientCA verifies TLS client certificates and forwarded ones; nil
	// disables both types.
	ClientCA *x509.CertPool
	// TrustedProxyCIDRs may send XFCC; empty refuses XFCC outright.
	TrustedProxyCIDRs []netip.Prefix
	// XFCCHeader defaults to DefaultXFCCHeader.
	XFCCHeader string
	// SkipImpersonationReview honours client Impersonate-* unchecked.
	SkipImpersonationReview bool
	// Clock drives cache TTLs and certificate validity; nil is the real one.
	Clock                  clock.PassiveClock
	SuccessTTL, FailureTTL time.Duration
}

// Authenticator authenticates requests and puts a core.Caller into their
// context.
type Authenticator struct {
	types  []Type
	byType map[Type]authenticator.Request
	xfcc   *xfccAuthenticator
	imp    *impersonationReviewer
}

// New builds an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if len(cfg.Types) == 0 {
		cfg.Types = DefaultTypes
	}
	if cfg.XFCCHeader == "" {
		cfg.XFCCHeader = DefaultXFCCHeader
	}
	if cfg.SubjectAccessReviews == nil && !cfg.SkipImpersonationReview {
		return nil, errors.New("auth: SubjectAccessReviews client required")
	}
	a := &Authenticator{types: cfg.Types, byType: map[Type]authenticator.Request{},
		imp: &impersonationReviewer{sars: cfg.SubjectAccessReviews, skip: cfg.SkipImpersonationReview}}
	clk := cfg.Clock
	verify := func() (x509.VerifyOptions, bool) {
		if cfg.ClientCA == nil {
			return x509.VerifyOptions{}, false
		}
		return x509.VerifyOptions{Roots: cfg.ClientCA, CurrentTime: clk.Now(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	certs := x509request.NewDynamic(verify, x509request.CommonNameUserConversion)
	for _, t := range cfg.Types {
		switch t {
		case BearerToken:
			if cfg.TokenReviews == nil {
				return nil, errors.New("auth: BearerToken needs a TokenReviews client")
			}
			tr := newTokenReviewer(cfg.TokenReviews, clk, cfg.SuccessTTL, cfg.FailureTTL)
			a.byType[t] = firstOf{bearertoken.New(tr), websocket.NewProtocolAuthenticator(tr)}
		case TLSCertificate:
			a.byType[t] = certs
		case XForwardedClientCert:
			a.xfcc = &xfccAuthenticator{header: cfg.XFCCHeader, trusted: cfg.TrustedProxyCIDRs, certs: certs}
			a.byType[t] = a.xfcc
		default:
			return nil, fmt.Errorf("auth: unknown type %q", t)
		}
	}
	return a, nil
}

// firstOf tries each authenticator until one has an opinion.
type firstOf []authenticator.Request

func (f firstOf) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	for _, a := range f {
		resp, ok, err := a.AuthenticateRequest(r)
		if ok || err != nil {
			return resp, ok, err
		}
	}
	return nil, false, nil
}

// Authenticate returns the caller of r. It mutates r's headers: credentials
// and client impersonation headers are removed. A failure is an
// apierrors Status error (401, or 503 when a review could not be made).
func (a *Authenticator) Authenticate(r *http.Request) (core.Caller, error) {
	log := klog.FromContext(r.Context())
	var resp *authenticator.Response
	// A forged XFCC header is an attack, not a missing credential: refuse
	// the request whatever else it carries.
	if a.xfcc != nil && a.xfcc.present(r) && !a.xfcc.trustedPeer(r) {
		log.Info("authentication refused", "reason", errUntrustedXFCC.Error(), "remote", r.RemoteAddr)
		return core.Caller{}, unauthorized()
	}
	var reasons []string
	for _, t := range a.types {
		res, ok, err := a.byType[t].AuthenticateRequest(r)
		if ok {
			resp = res
			break
		}
		if rerr := (errReview{}); errors.As(err, &rerr) {
			log.Error(err, "authentication unavailable", "type", t)
			return core.Caller{}, apierrors.NewServiceUnavailable("authentication is unavailable")
		}
		if err != nil {
			reasons = append(reasons, string(t)+": "+err.Error())
		}
	}
	if resp == nil {
		log.V(2).Info("authentication failed", "remote", r.RemoteAddr, "reasons", reasons)
		return core.Caller{}, unauthorized()
	}
	u := resp.User
	c := core.Caller{User: u.GetName(), UID: u.GetUID(), Extra: u.GetExtra()}
	for _, g := range u.GetGroups() {
		// An empty group name (a static token file with an empty groups
		// column yields one) names nobody; forwarding it is noise.
		if g != "" {
			c.Groups = append(c.Groups, g)
		}
	}
	// kube-apiserver adds this group to every authenticated user; a
	// TokenReview already carries it, a certificate does not.
	c.Groups = appendMissing(c.Groups, user.AllAuthenticated)
	stripCredentials(r.Header, a.xfccHeader())

	dropConnectionNamed(r.Header)
	imp := takeImpersonation(r.Header)
	if imp.extra {
		log.V(2).Info("client Impersonate-Extra-* headers deleted", "user", c.User)
	}
	return a.imp.resolve(r.Context(), c, imp)
}

func (a *Authenticator) xfccHeader() string {
	if a.xfcc == nil {
		return DefaultXFCCHeader
	}
	return a.xfcc.header
}

// stripCredentials removes every client credential so nothing of it
// reaches the core or the downstream.
func stripCredentials(h http.Header, xfccHeader string) {
	h.Del("Authorization")
	h.Del(xfccHeader)
	h.Del(DefaultXFCCHeader)
	const proto = "Sec-Websocket-Protocol"
	var keep []string
	for _, v := range h.Values(proto) {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, "base64url.bearer.authorization.k8s.io.") {
				keep = append(keep, p)
			}
		}
	}
	if h.Get(proto) != "" {
		h.Del(proto)
		if len(keep) > 0 {
			h.Set(proto, strings.Join(keep, ","))
		}
	}
}

// Handler authenticates every request before next; failures are answered
// with a Status and never reach next.
func (a *Authenticator) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := a.Authenticate(r)
		if err != nil {
			writeStatus(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(core.WithCaller(r.Context(), c)))
	})
}
