package serviceaccounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/wharfhub/wharf/hub/serviceaccounts/satest"
)

func TestTokenRequest(t *testing.T) {
	store := satest.NewStore(t)
	tokens := newTokens(t, newKey(t), issuer)
	a := NewAuthenticator(tokens)
	a.SetStore(store)
	r := NewTokenREST(store, tokens, 48*time.Hour)
	satest.Create(t, store, clusterA, "default", "bot")

	for _, tc := range []struct {
		name    string
		sa      string
		spec    authenticationv1.TokenRequestSpec
		wantTTL time.Duration
		wantAud []string
		invalid bool
		missing bool
		// badRequest: refused with 400, upstream's "cannot bind token".
		badRequest bool
		// dryRun asks for a dry run, which must mint nothing.
		dryRun bool
		meta   metav1.ObjectMeta
	}{
		{name: "defaults", sa: "bot", wantTTL: time.Hour, wantAud: []string{issuer}},
		{name: "explicit", sa: "bot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](7200), Audiences: []string{issuer, "vault"}},
			wantTTL: 2 * time.Hour, wantAud: []string{issuer, "vault"}},
		{name: "minimum", sa: "bot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}, wantTTL: 10 * time.Minute, wantAud: []string{issuer}},
		{name: "capped at the maximum", sa: "bot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](100 * 3600)}, wantTTL: 48 * time.Hour, wantAud: []string{issuer}},
		{name: "too short", sa: "bot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}, invalid: true},
		{name: "too long", sa: "bot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1 << 33)}, invalid: true},
		{name: "empty audience", sa: "bot", spec: authenticationv1.TokenRequestSpec{Audiences: []string{""}}, invalid: true},
		// Pods and Nodes do not exist on the hub; without Secret storage
		// Secrets cannot be bound either (the hub always has it).
		{name: "bound to a pod", sa: "bot", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}}, badRequest: true},
		{name: "bound to a secret without secret storage", sa: "bot", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s"}}, badRequest: true},
		{name: "no such service account", sa: "nobody", missing: true},
		{name: "other name in the body", sa: "bot", meta: metav1.ObjectMeta{Name: "other"}, invalid: true},
		{name: "other namespace in the body", sa: "bot", meta: metav1.ObjectMeta{Namespace: "kube-system"}, invalid: true},
		{name: "same name in the body", sa: "bot", meta: metav1.ObjectMeta{Name: "bot", Namespace: "default"}, wantTTL: time.Hour, wantAud: []string{issuer}},
		{name: "dry run mints nothing", sa: "bot", dryRun: true},
		{name: "dry run still validates", sa: "bot", dryRun: true, spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}, invalid: true},
		{name: "dry run still needs the service account", sa: "nobody", dryRun: true, missing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &metav1.CreateOptions{}
			if tc.dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			obj, err := r.Create(satest.Context(clusterA, "default"), tc.sa, &authenticationv1.TokenRequest{ObjectMeta: tc.meta, Spec: tc.spec}, nil, opts)
			switch {
			case tc.badRequest:
				if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cannot bind token to object of type /v1, Kind=") {
					t.Fatalf("want BadRequest, got %v", err)
				}
				return
			case tc.invalid:
				if !apierrors.IsInvalid(err) {
					t.Fatalf("want Invalid, got %v", err)
				}
				return
			case tc.missing:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("want NotFound, got %v", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			out := obj.(*authenticationv1.TokenRequest)
			if tc.dryRun {
				if out.Status.Token != "" || !out.Status.ExpirationTimestamp.IsZero() {
					t.Fatalf("dry run returned a token: %+v", out.Status)
				}
				return
			}
			ttl := time.Until(out.Status.ExpirationTimestamp.Time)
			if ttl > tc.wantTTL || ttl < tc.wantTTL-time.Minute || *out.Spec.ExpirationSeconds != int64(tc.wantTTL/time.Second) {
				t.Fatalf("ttl %s (spec %d), want %s", ttl, *out.Spec.ExpirationSeconds, tc.wantTTL)
			}
			v, err := tokens.Verify(out.Status.Token)
			if err != nil {
				t.Fatal(err)
			}
			if v.Cluster != clusterA || v.Namespace != "default" || v.Name != "bot" {
				t.Fatalf("token bound to %+v", v.Subject)
			}
			_, claims := payload(t, out.Status.Token)
			if got := claims["aud"]; !audEqual(got, tc.wantAud) {
				t.Fatalf("aud %v, want %v", got, tc.wantAud)
			}
			if _, ok, err := a.AuthenticateToken(t.Context(), out.Status.Token); !ok {
				t.Fatalf("minted token refused: %v", err)
			}
		})
	}
}

// audEqual compares a decoded aud claim (a string or a list) with want.
func audEqual(got any, want []string) bool {
	switch g := got.(type) {
	case string:
		return len(want) == 1 && want[0] == g
	case []any:
		if len(g) != len(want) {
			return false
		}
		for i := range g {
			if g[i] != want[i] {
				return false
			}
		}
		return true
	}
	return false
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		pem  string
		ok   bool
	}{
		{"ed25519 pkcs8", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----\n", true},
		{"not pem", "hello", false},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKeyPEM([]byte(tc.pem))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if k.Algorithm() != "EdDSA" || k.ID() == "" {
				t.Fatalf("alg %s kid %q", k.Algorithm(), k.ID())
			}
			tk := newTokens(t, k, issuer)
			tok, _, err := tk.Mint(Subject{Cluster: clusterA, Namespace: "ns", Name: "bot", UID: "u"}, nil, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tk.Verify(tok); err != nil {
				t.Fatalf("EdDSA round trip: %v", err)
			}
			if _, err := newTokens(t, newKey(t), issuer).Verify(tok); err == nil {
				t.Fatal("EdDSA token verified by an ES256 key")
			}
		})
	}
	if k := newKey(t); k.Algorithm() != "ES256" {
		t.Fatalf("generated key alg %s", k.Algorithm())
	}
}

func TestOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	good, err := GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	goodFile, badFile := filepath.Join(dir, "good.pem"), filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(goodFile, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		o     Options
		valid bool
	}{
		{"defaults", *NewOptions(), true},
		{"key file", Options{KeyFile: goodFile, MaxExpiration: time.Hour}, true},
		{"unparsable key file", Options{KeyFile: badFile, MaxExpiration: time.Hour}, false},
		{"missing key file", Options{KeyFile: filepath.Join(dir, "none"), MaxExpiration: time.Hour}, false},
		{"maximum below the minimum", Options{MaxExpiration: time.Minute}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if errs := tc.o.Validate(); (len(errs) == 0) != tc.valid {
				t.Fatalf("Validate() = %v, want valid=%v", errs, tc.valid)
			}
		})
	}
}
