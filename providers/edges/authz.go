package edges

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/sdk"
)

// ClusterExtraKey is the user-info extra the hub uses to confine an identity
// to one logical cluster. A SubjectAccessReview for a certificate caller
// carries it so that the hub evaluates the caller as confined to the edge's
// workspace, the way it did when it admitted the request.
const ClusterExtraKey = "wharf.dev/cluster"

// Defaults for AuthorizerConfig.
const (
	DefaultDecisionTTL       = 10 * time.Second
	DefaultMaxCachedDecision = 10000
)

// AuthorizerConfig configures NewHubAuthorizer.
type AuthorizerConfig struct {
	// HubURL is the hub's internal URL (sdk.HubConfig.HubURL).
	HubURL string
	// RestConfig acts as the provider (sdk.HubConfig.RestConfig). Its TLS
	// settings (CA, server name) verify the hub for every review; its
	// credential is used only for SubjectAccessReviews of certificate callers.
	RestConfig *rest.Config
	// TTL of cached decisions, allowed and denied alike. Zero means 10 s.
	TTL time.Duration
	// MaxEntries bounds the decision cache. Zero means 10000.
	MaxEntries int
	// Clock is injectable for tests. Nil means the real clock.
	Clock clock.PassiveClock
}

// HubAuthorizer is the Authorizer the provider runs with: it decides
// whether the caller of a backend request may use an edge by asking the
// hub. It answers with Kubernetes StatusErrors.
type HubAuthorizer struct {
	hubURL   *url.URL
	caller   *http.Client // TLS to the hub, no credential: the caller's token is added per review
	provider *http.Client // acts as the provider (SubjectAccessReviews)
	cache    *decisionCache
}

// NewHubAuthorizer builds a HubAuthorizer. It needs the hub URL and a rest
// config whose TLS settings trust the hub.
func NewHubAuthorizer(cfg AuthorizerConfig) (*HubAuthorizer, error) {
	if cfg.HubURL == "" || cfg.RestConfig == nil {
		return nil, errors.New("edges authorizer: hub URL and rest config are required")
	}
	u, err := url.Parse(cfg.HubURL)
	if err != nil {
		return nil, fmt.Errorf("edges authorizer: hub URL: %w", err)
	}
	// The caller's client keeps only what verifies the hub; the provider's
	// credential must never accompany a caller's review.
	tlsOnly := &rest.Config{Host: cfg.RestConfig.Host, TLSClientConfig: rest.TLSClientConfig{
		Insecure:   cfg.RestConfig.Insecure,
		ServerName: cfg.RestConfig.ServerName,
		CAFile:     cfg.RestConfig.CAFile,
		CAData:     cfg.RestConfig.CAData,
	}, Timeout: cfg.RestConfig.Timeout}
	caller, err := rest.HTTPClientFor(tlsOnly)
	if err != nil {
		return nil, fmt.Errorf("edges authorizer: caller client: %w", err)
	}
	provider, err := rest.HTTPClientFor(cfg.RestConfig)
	if err != nil {
		return nil, fmt.Errorf("edges authorizer: provider client: %w", err)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultDecisionTTL
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxCachedDecision
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &HubAuthorizer{
		hubURL: u, caller: caller, provider: provider,
		cache: newDecisionCache(cfg.Clock, cfg.TTL, cfg.MaxEntries),
	}, nil
}

// Authorize checks that the caller may do verb on edges/<name> in cluster.
// It returns nil when allowed, 401 without a hub-asserted identity, and
// otherwise 403 with kube's wording, the same whether or not the edge
// exists: the caller learns nothing about edges they may not use.
func (a *HubAuthorizer) Authorize(ctx context.Context, r *http.Request, cluster, name, verb string) error {
	attrs := reviewAttrs{resource: &authorizationv1.ResourceAttributes{
		Group: v1alpha1.GroupName, Version: v1alpha1.Version, Resource: v1alpha1.Resource, Name: name, Verb: verb,
	}}
	return a.authorize(ctx, r, cluster, attrs, func(user string) error {
		return forbiddenEdge(user, name, verb)
	})
}

// AuthorizeNonResource checks verb on a non-resource path in cluster.
func (a *HubAuthorizer) AuthorizeNonResource(ctx context.Context, r *http.Request, cluster, path, verb string) error {
	attrs := reviewAttrs{nonResource: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb}}
	return a.authorize(ctx, r, cluster, attrs, func(user string) error {
		return apierrors.NewForbidden(schema.GroupResource{}, "",
			fmt.Errorf("User %q cannot %s path %q", user, verb, path))
	})
}

// forbiddenEdge is kube's RBAC denial for a cluster-scoped edge.
func forbiddenEdge(user, name, verb string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupName, Resource: v1alpha1.Resource}, name,
		fmt.Errorf("User %q cannot %s resource %q in API group %q at the cluster scope", user, verb, v1alpha1.Resource, v1alpha1.GroupName))
}

type reviewAttrs struct {
	resource    *authorizationv1.ResourceAttributes
	nonResource *authorizationv1.NonResourceAttributes
}

func (ra reviewAttrs) key() string {
	if ra.resource != nil {
		return "r\x00" + ra.resource.Name + "\x00" + ra.resource.Verb
	}
	return "n\x00" + ra.nonResource.Path + "\x00" + ra.nonResource.Verb
}

func (a *HubAuthorizer) authorize(ctx context.Context, r *http.Request, cluster string, attrs reviewAttrs, deny func(user string) error) error {
	id, ok := sdk.IdentityFrom(r)
	if !ok {
		return apierrors.NewUnauthorized("Unauthorized")
	}
	if !validCluster(cluster) {
		return deny(id.User)
	}
	token, hasToken := bearerToken(r.Header.Get("Authorization"))
	var key string
	if hasToken {
		sum := sha256.Sum256([]byte(token))
		key = cluster + "\x00t\x00" + hex.EncodeToString(sum[:]) + "\x00" + attrs.key()
	} else {
		// Without a token only the hub's own verification of the active
		// workspace vouches for the caller: nothing says they may act in
		// any other workspace, so any other one is refused outright.
		if cluster != id.Cluster {
			return deny(id.User)
		}
		groups := slices.Clone(id.Groups)
		slices.Sort(groups)
		key = cluster + "\x00u\x00" + id.User + "\x00" + strings.Join(groups, "\x00") + "\x00\x00" + attrs.key()
	}
	if allowed, found := a.cache.get(key); found {
		if allowed {
			return nil
		}
		return deny(id.User)
	}
	var allowed bool
	var err error
	if hasToken {
		allowed, err = a.selfReview(ctx, cluster, token, attrs)
	} else {
		allowed, err = a.subjectReview(ctx, cluster, id, attrs)
	}
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) {
			return err
		}
		klog.FromContext(ctx).Error(err, "Edge authorization check failed", "cluster", cluster, "user", id.User)
		return apierrors.NewInternalError(errors.New("authorization check failed"))
	}
	a.cache.put(key, allowed)
	if !allowed {
		return deny(id.User)
	}
	return nil
}

// selfReview asks the hub, with the caller's own token, whether the caller
// may do attrs in cluster. The hub evaluates the full identity, including
// the confinement of service accounts to their workspace, which a
// SubjectAccessReview naming only user and groups would lose.
func (a *HubAuthorizer) selfReview(ctx context.Context, cluster, token string, attrs reviewAttrs) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"},
		Spec:     authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs.resource, NonResourceAttributes: attrs.nonResource},
	}
	var out authorizationv1.SelfSubjectAccessReview
	code, err := a.post(ctx, a.caller, cluster, "selfsubjectaccessreviews", "Bearer "+token, review, &out)
	switch {
	case err != nil:
		return false, err
	case code == http.StatusUnauthorized:
		// The hub admitted the request moments ago; a token rejected now
		// has expired or been revoked.
		return false, apierrors.NewUnauthorized("Unauthorized")
	case code == http.StatusForbidden:
		// The caller may not even review their own access there, e.g. a
		// workspace they cannot enter: a plain denial.
		return false, nil
	case code != http.StatusCreated && code != http.StatusOK:
		return false, fmt.Errorf("self subject access review: hub answered %d", code)
	}
	return out.Status.Allowed && !out.Status.Denied, nil
}

// subjectReview asks the hub, as the provider, about a caller that has no
// bearer token (a client certificate): user, groups and the confinement
// extra to this cluster.
func (a *HubAuthorizer) subjectReview(ctx context.Context, cluster string, id sdk.Identity, attrs reviewAttrs) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: attrs.resource, NonResourceAttributes: attrs.nonResource,
			User: id.User, Groups: id.Groups,
			Extra: map[string]authorizationv1.ExtraValue{ClusterExtraKey: {cluster}},
		},
	}
	var out authorizationv1.SubjectAccessReview
	code, err := a.post(ctx, a.provider, cluster, "subjectaccessreviews", "", review, &out)
	switch {
	case err != nil:
		return false, err
	case code == http.StatusForbidden || code == http.StatusUnauthorized:
		// The provider may not review here (not enabled, or reviews not
		// granted): nothing vouches for the caller, so refuse.
		klog.FromContext(ctx).V(2).Info("Provider may not review access; denying certificate caller", "cluster", cluster, "code", code)
		return false, nil
	case code != http.StatusCreated && code != http.StatusOK:
		return false, fmt.Errorf("subject access review: hub answered %d", code)
	}
	return out.Status.Allowed && !out.Status.Denied, nil
}

func (a *HubAuthorizer) post(ctx context.Context, c *http.Client, cluster, resource, authz string, in, out any) (int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, fmt.Errorf("encoding review: %w", err)
	}
	u := *a.hubURL
	u.Path = strings.TrimSuffix(u.Path, "/") + "/clusters/" + cluster + "/apis/authorization.k8s.io/v1/" + resource
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("review request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := c.Do(req)
	if err != nil {
		// url.Error carries the URL only, never the header.
		return 0, fmt.Errorf("review request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("review response: %w", err)
	}
	if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, fmt.Errorf("review response: %w", err)
		}
	}
	return resp.StatusCode, nil
}

func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
