package serviceaccounts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/serviceaccounts/satest"
)

// TestTokenReview runs reviews through the hub's real union (static
// tokens and service-account tokens on real storage) and its real
// throttle.
func TestTokenReview(t *testing.T) {
	const clusterB = cluster.ID("bbbbbbbbbbbbbbbb")
	store := satest.NewStore(t)
	tokens := newTokens(t, newKey(t), issuer)
	sa := NewAuthenticator(tokens)
	sa.SetStore(store)
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte("alice-token,alice,alice-uid\nbob-token,bob,bob-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	static, err := authn.StaticTokens("", nil, file)
	if err != nil {
		t.Fatal(err)
	}
	union := authn.New(authn.Sources{Static: static, ServiceAccounts: sa, APIAudiences: []string{issuer}})
	throttle := authn.NewThrottle(&authn.ThrottleOptions{FailureRate: 0.0001, FailureBurst: 3}, nil, "", clocktesting.NewFakeClock(time.Now()))
	// The workspace grants alice access, nobody else.
	mayUse := func(_ context.Context, u user.Info) (bool, error) { return u.GetName() == "alice", nil }
	r := NewTokenReviewREST(union, []string{issuer}, mayUse, throttle)

	bot := satest.Create(t, store, clusterA, "default", "bot")
	botTok, _, err := tokens.Mint(Subject{Cluster: clusterA, Namespace: "default", Name: "bot", UID: bot.UID}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	vaultTok, _, err := tokens.Mint(Subject{Cluster: clusterA, Namespace: "default", Name: "bot", UID: bot.UID}, []string{"vault"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	in := func(id cluster.ID) context.Context { return cluster.WithCluster(context.Background(), id) }
	do := func(ctx context.Context, token string, dryRun bool, auds ...string) (*authenticationv1.TokenReview, error) {
		opts := &metav1.CreateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		obj, err := r.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, nil, opts)
		if err != nil {
			return nil, err
		}
		return obj.(*authenticationv1.TokenReview), nil
	}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		token string
		auds  []string
		user  string
	}{
		{"service account in its workspace", in(clusterA), botTok, nil, "system:serviceaccount:default:bot"},
		{"service account elsewhere", in(clusterB), botTok, nil, ""},
		{"for an audience it lacks", in(clusterA), botTok, []string{"vault"}, ""},
		{"for its audience", in(clusterA), vaultTok, []string{"vault", "x"}, "system:serviceaccount:default:bot"},
		{"another audience's token as an API token", in(clusterA), vaultTok, nil, ""},
		{"person who may use the workspace", in(clusterB), "alice-token", nil, "alice"},
		{"static token for a foreign audience", in(clusterB), "alice-token", []string{"vault"}, ""},
		{"person who may not", in(clusterA), "bob-token", nil, ""},
		{"garbage JWT", in(clusterA), "a.b.c", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := do(tc.ctx, tc.token, false, tc.auds...)
			if err != nil {
				t.Fatal(err)
			}
			st := out.Status
			if tc.user == "" {
				if st.Authenticated || st.Error != "invalid bearer token" || st.User.Username != "" || st.Audiences != nil {
					t.Fatalf("want the answer of a wrong token, got %+v", st)
				}
				return
			}
			if !st.Authenticated || st.User.Username != tc.user || st.Error != "" || len(st.Audiences) != 1 {
				t.Fatalf("got %+v", st)
			}
		})
	}

	t.Run("malformed", func(t *testing.T) {
		if _, err := do(in(clusterA), "", false); !apierrors.IsBadRequest(err) || err.Error() != "token is required for TokenReview in authentication" {
			t.Fatalf("empty token: %v", err)
		}
		if _, err := do(request.WithNamespace(in(clusterA), "default"), "x", false); !apierrors.IsBadRequest(err) {
			t.Fatalf("namespaced: %v", err)
		}
	})

	// The budget (burst 3) already paid for bob-token and for alice-token
	// with a foreign audience (a valid token not reported is charged like
	// any other); one more guess uses it up. Then guessable tokens are
	// refused unevaluated, in a dry run too and a good one included,
	// while JWTs are still judged.
	t.Run("throttle", func(t *testing.T) {
		if out, err := do(in(clusterA), "guess", false); err != nil || out.Status.Authenticated {
			t.Fatalf("guess: %v %+v", err, out)
		}
		for _, tc := range []struct {
			tok string
			dry bool
		}{{"guess", true}, {"guess", false}, {"alice-token", false}} {
			if _, err := do(in(clusterB), tc.tok, tc.dry); !apierrors.IsTooManyRequests(err) {
				t.Fatalf("%s (dry run %v) over budget: %v", tc.tok, tc.dry, err)
			}
		}
		if out, err := do(in(clusterA), botTok, false); err != nil || !out.Status.Authenticated {
			t.Fatalf("service-account token over budget: %v %+v", err, out)
		}
	})
}
