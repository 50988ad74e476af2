package edges

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/sdk"
)

// grant gives subject (a kubectl-style "kind name" pair) proxy on one edge.
func grant(name, edge, subjectKind, subject string) string {
	return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s}
rules:
- apiGroups: [edges.wharf.dev]
  resources: [edges]
  resourceNames: [%[2]s]
  verbs: [proxy]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: %[3]s, name: "%[4]s"}
`, name, edge, subjectKind, subject)
}

// caller is a backend request as the hub forwards it: the asserted
// identity and, unless token is empty, the caller's own bearer token.
func caller(id sdk.Identity, token string) *http.Request {
	r, _ := http.NewRequest("GET", "http://provider/edgeproxy/x", nil)
	sdk.SetIdentity(r.Header, id)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func wantCode(t *testing.T, what string, err error, code int32) {
	t.Helper()
	switch {
	case code == 0 && err != nil:
		t.Errorf("%s: want allowed, got %v", what, err)
	case code != 0 && err == nil:
		t.Errorf("%s: want %d, got allowed", what, code)
	case code != 0:
		var se apierrors.APIStatus
		if !errorsAs(err, &se) || se.Status().Code != code {
			t.Errorf("%s: want %d, got %v", what, code, err)
		}
	}
}

func errorsAs(err error, se *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*se = s
	}
	return ok
}

// TestAuthorizerAgainstHub runs the authorizer against a real wharf-hub:
// per-workspace RBAC, service-account confinement, the cache's cluster
// keying and TTL, the certificate-caller path and kube's denial wording.
func TestAuthorizerAgainstHub(t *testing.T) {
	h := startRealHub(t)
	x, y := h.workspace("edges-x"), h.workspace("edges-y")
	h.apply("root:edges-x", grant("alice-lab", "lab", "User", "alice"))
	h.apply("root:edges-x", grant("everyone-open", "open", "Group", "system:authenticated"))
	h.apply("root:edges-y", grant("bots-open", "open", "Group", "system:serviceaccounts"))
	h.must("root:edges-y", "create", "serviceaccount", "bot", "-n", "default")
	botToken := h.must("root:edges-y", "create", "token", "bot", "-n", "default")

	_, ca := h.adminRestConfig()
	clk := clocktesting.NewFakeClock(time.Now())
	newAuthz := func(rc *rest.Config) *HubAuthorizer {
		a, err := NewHubAuthorizer(AuthorizerConfig{HubURL: h.URL, RestConfig: rc, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// The provider's own credential matters only for certificate callers;
	// the admin's token stands in for it there (the provider's right to
	// create SubjectAccessReviews is the hub's business, not this test's).
	provider := &rest.Config{Host: h.URL, BearerToken: h.Token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	a := newAuthz(provider)
	ctx := context.Background()
	aliceX := sdk.Identity{User: "alice", Groups: []string{"devs", "system:authenticated"}, Tenant: "root:edges-x", Cluster: x}
	bobX := sdk.Identity{User: "bob", Groups: []string{"devs", "system:authenticated"}, Tenant: "root:edges-x", Cluster: x}
	bot := sdk.Identity{User: "system:serviceaccount:default:bot", Groups: []string{"system:serviceaccounts", "system:authenticated"}, Tenant: "root:edges-y", Cluster: y}

	// RBAC reaches the hub's authorizer through a watch: wait for it with
	// uncached authorizers.
	waitFor(t, 60*time.Second, func() bool {
		return newAuthz(provider).Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy) == nil &&
			newAuthz(provider).Authorize(ctx, caller(bot, botToken), y, "open", VerbProxy) == nil
	})

	t.Run("tokens", func(t *testing.T) {
		for _, tc := range []struct {
			what    string
			id      sdk.Identity
			token   string
			cluster string
			edge    string
			code    int32
		}{
			{"alice lab in X", aliceX, "alice-token", x, "lab", 0},
			// The allowed decision for X is cached now; Y must not see it.
			{"alice lab in Y", aliceX, "alice-token", y, "lab", 403},
			{"alice other edge in X", aliceX, "alice-token", x, "other", 403},
			{"bob lab in X", bobX, "bob-token", x, "lab", 403},
			{"bob open in X", bobX, "bob-token", x, "open", 0},
			{"bot open in its own Y", bot, botToken, y, "open", 0},
			// X grants system:authenticated, but the bot's token is confined
			// to Y: a review naming only user and groups would let it in.
			{"bot open in X", bot, botToken, x, "open", 403},
			{"bad token", aliceX, "not-a-token", x, "lab", 401},
			{"no identity", sdk.Identity{}, "alice-token", x, "lab", 401},
			{"escaping cluster", aliceX, "alice-token", x + "/../" + y, "lab", 403},
		} {
			wantCode(t, tc.what, a.Authorize(ctx, caller(tc.id, tc.token), tc.cluster, tc.edge, VerbProxy), tc.code)
		}
	})

	t.Run("certificate callers", func(t *testing.T) {
		// No bearer token: only the active workspace, reviewed as the provider.
		wantCode(t, "alice open in active X", a.Authorize(ctx, caller(aliceX, ""), x, "open", VerbProxy), 0)
		wantCode(t, "alice lab in active X", a.Authorize(ctx, caller(aliceX, ""), x, "lab", VerbProxy), 0)
		wantCode(t, "bob lab in active X", a.Authorize(ctx, caller(bobX, ""), x, "lab", VerbProxy), 403)
		// Y is not the active workspace: refused without asking anyone.
		noReview := newAuthz(&rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
		wantCode(t, "alice open in Y", noReview.Authorize(ctx, caller(aliceX, ""), y, "open", VerbProxy), 403)
	})

	t.Run("denial wording is kube's", func(t *testing.T) {
		// The hub's own answer to bob reading edges/lab in X.
		req, _ := http.NewRequest("GET", h.URL+"/clusters/"+x+"/apis/edges.wharf.dev/v1alpha1/edges/lab", nil)
		req.Header.Set("Authorization", "Bearer bob-token")
		resp, err := hubClient(ca).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var hubSt metav1.Status
		if err := json.Unmarshal(body, &hubSt); err != nil || resp.StatusCode != 403 {
			t.Fatalf("hub answered %d %s", resp.StatusCode, body)
		}
		ours := a.Authorize(ctx, caller(bobX, "bob-token"), x, "lab", "get").(apierrors.APIStatus).Status()
		if ours.Message != hubSt.Message || ours.Reason != hubSt.Reason || !equalDetails(ours.Details, hubSt.Details) {
			t.Errorf("ours\n %+v\nhub's\n %+v", ours, hubSt)
		}
		want := `edges.edges.wharf.dev "lab" is forbidden: User "bob" cannot proxy resource "edges" in API group "edges.wharf.dev" at the cluster scope`
		if got := a.Authorize(ctx, caller(bobX, "bob-token"), x, "lab", VerbProxy).Error(); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		nr := a.AuthorizeNonResource(ctx, caller(bobX, "bob-token"), x, "/edges-internal", "get")
		if nr == nil || nr.Error() != `forbidden: User "bob" cannot get path "/edges-internal"` {
			t.Errorf("non-resource denial: %v", nr)
		}
	})

	t.Run("ttl", func(t *testing.T) {
		// Cached: alice's allow in X holds after her binding is gone,
		// until the TTL passes on the injected clock.
		wantCode(t, "alice lab before", a.Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy), 0)
		h.must("root:edges-x", "delete", "clusterrolebinding", "alice-lab")
		waitFor(t, 60*time.Second, func() bool {
			return newAuthz(provider).Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy) != nil
		})
		wantCode(t, "alice lab cached", a.Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy), 0)
		clk.Step(DefaultDecisionTTL - time.Second)
		wantCode(t, "alice lab just before expiry", a.Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy), 0)
		clk.Step(2 * time.Second)
		wantCode(t, "alice lab expired", a.Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy), 403)
		// Denials are cached too: a new grant waits for the TTL.
		h.apply("root:edges-x", grant("alice-lab", "lab", "User", "alice"))
		waitFor(t, 60*time.Second, func() bool {
			return newAuthz(provider).Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy) == nil
		})
		wantCode(t, "alice lab denial cached", a.Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy), 403)
		clk.Step(DefaultDecisionTTL + time.Second)
		wantCode(t, "alice lab regranted", a.Authorize(ctx, caller(aliceX, "alice-token"), x, "lab", VerbProxy), 0)
	})
}

func equalDetails(a, b *metav1.StatusDetails) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Group == b.Group && a.Kind == b.Kind
}

// TestDecisionCacheBounded: a flood of distinct keys never grows the cache
// past its bound, and an expired entry is never returned.
func TestDecisionCacheBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := newDecisionCache(clk, 10*time.Second, 100)
	for i := range 1000 {
		c.put(fmt.Sprintf("c%d\x00k", i), true)
		if c.len() > 100 {
			t.Fatalf("cache grew to %d", c.len())
		}
	}
	c.put("cA\x00k", true)
	if ok, found := c.get("cA\x00k"); !ok || !found {
		t.Fatal("fresh entry missing")
	}
	if _, found := c.get("cB\x00k"); found {
		t.Fatal("other cluster's key answered")
	}
	clk.Step(10 * time.Second)
	if _, found := c.get("cA\x00k"); found {
		t.Fatal("expired entry returned")
	}
}

// TestAuthorizerNoIdentity: without a hub-asserted user the answer is 401
// before any review (the hub address here accepts nothing).
func TestAuthorizerNoIdentity(t *testing.T) {
	a, err := NewHubAuthorizer(AuthorizerConfig{HubURL: "https://127.0.0.1:1", RestConfig: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Authorize(context.Background(), caller(sdk.Identity{}, "tok"), "c1", "lab", VerbProxy)
	if !apierrors.IsUnauthorized(err) || strings.Contains(err.Error(), "tok") {
		t.Fatalf("%v", err)
	}
}
