package serviceaccounts

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/serviceaccounts/satest"
)

const (
	issuer   = "https://hub.example.com"
	clusterA = cluster.ID("aaaaaaaaaaaaaaaa")
)

func newKey(t testing.TB) *Key {
	t.Helper()
	p, err := GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseKeyPEM(p)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newTokens(t testing.TB, k *Key, iss string) *Tokens {
	t.Helper()
	tk, err := NewTokens(k, iss, []string{iss})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// segments splits a compact JWS and decodes its payload.
func payload(t *testing.T, tok string) ([]string, map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return parts, m
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestAuthenticate(t *testing.T) {
	store := satest.NewStore(t)
	key := newKey(t)
	tokens := newTokens(t, key, issuer)
	a := NewAuthenticator(tokens)
	a.SetStore(store)

	sa := satest.Create(t, store, clusterA, "default", "bot")
	subject := Subject{Cluster: clusterA, Namespace: "default", Name: "bot", UID: sa.UID}
	mint := func(tk *Tokens, s Subject, aud ...string) string {
		tok, _, err := tk.Mint(s, aud, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := mint(tokens, subject)

	past := newTokens(t, key, issuer)
	past.now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	future := newTokens(t, key, issuer)
	future.now = func() time.Time { return time.Now().Add(time.Hour) }

	// Deleted and recreated ServiceAccounts, each with a token minted
	// while it existed.
	gone := satest.Create(t, store, clusterA, "default", "gone")
	goneTok := mint(tokens, Subject{Cluster: clusterA, Namespace: "default", Name: "gone", UID: gone.UID})
	satest.Delete(t, store, clusterA, "default", "gone")
	again := satest.Create(t, store, clusterA, "default", "again")
	againTok := mint(tokens, Subject{Cluster: clusterA, Namespace: "default", Name: "again", UID: again.UID})
	satest.Delete(t, store, clusterA, "default", "again")
	satest.Create(t, store, clusterA, "default", "again")

	for _, tc := range []struct {
		name  string
		token func() string
		ok    bool
	}{
		{"valid", func() string { return valid }, true},
		{"expired", func() string { return mint(past, subject) }, false},
		{"not yet valid", func() string { return mint(future, subject) }, false},
		{"wrong audience", func() string { return mint(tokens, subject, "vault") }, false},
		{"extra audience besides the hub's", func() string { return mint(tokens, subject, "vault", issuer) }, true},
		{"wrong issuer", func() string { return mint(newTokens(t, key, "https://evil.example.com"), subject) }, false},
		{"other key", func() string { return mint(newTokens(t, newKey(t), issuer), subject) }, false},
		{"alg none", func() string {
			parts, _ := payload(t, valid)
			return encode(t, map[string]string{"alg": "none", "typ": "JWT"}) + "." + parts[1] + "."
		}, false},
		{"HS256 keyed with the public key", func() string {
			parts, _ := payload(t, valid)
			pub, err := x509.MarshalPKIXPublicKey(key.Public())
			if err != nil {
				t.Fatal(err)
			}
			signing := encode(t, map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + parts[1]
			mac := hmac.New(sha256.New, pub)
			mac.Write([]byte(signing))
			return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
		}, false},
		{"tampered payload", func() string {
			parts, claims := payload(t, valid)
			claims["wharf.dev"].(map[string]any)["namespace"] = "kube-system"
			claims["sub"] = "system:serviceaccount:kube-system:bot"
			return parts[0] + "." + encode(t, claims) + "." + parts[2]
		}, false},
		{"signed without binding claims", func() string {
			tok, err := jwt.Signed(tokens.signer).Claims(jwt.Claims{Issuer: issuer, Subject: subject.Username(), Audience: jwt.Audience{issuer},
				Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}, false},
		{"subject not matching binding", func() string {
			tok, err := jwt.Signed(tokens.signer).Claims(jwt.Claims{Issuer: issuer, Subject: "system:serviceaccount:default:other", Audience: jwt.Audience{issuer},
				Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).
				Claims(privateClaims{Wharf: &binding{Cluster: string(clusterA), Namespace: "default", ServiceAccount: ref{Name: "bot", UID: string(sa.UID)}}}).Serialize()
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}, false},
		{"other workspace's service account of the same name", func() string {
			s := subject
			s.Cluster = "bbbbbbbbbbbbbbbb"
			return mint(tokens, s)
		}, false},
		{"service account deleted", func() string { return goneTok }, false},
		{"service account recreated with a new uid", func() string { return againTok }, false},
		{"garbage", func() string { return "not-a-jwt" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token()
			resp, ok, err := a.AuthenticateToken(context.Background(), tok)
			if ok != tc.ok {
				t.Fatalf("authenticated=%v (err %v), want %v", ok, err, tc.ok)
			}
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Fatalf("error reveals the token: %v", err)
			}
			if !ok {
				t.Logf("refused: %v", err)
				if resp != nil {
					t.Fatalf("refused with a response: %v", resp)
				}
				return
			}
			u := resp.User
			wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:cluster:" + string(clusterA)}
			if u.GetName() != "system:serviceaccount:default:bot" || u.GetUID() != string(sa.UID) || !slices.Equal(u.GetGroups(), wantGroups) {
				t.Fatalf("got %s %s %v", u.GetName(), u.GetUID(), u.GetGroups())
			}
			if got, bound := BoundCluster(u); !bound || got != clusterA {
				t.Fatalf("bound cluster = %q, %v", got, bound)
			}
			if !slices.Equal(resp.Audiences, []string{issuer}) {
				t.Fatalf("audiences %v", resp.Audiences)
			}
		})
	}
}

// TestRevocationIsImmediate: the request right after the delete fails; no
// cache sits between the authenticator and storage.
func TestRevocationIsImmediate(t *testing.T) {
	store := satest.NewStore(t)
	tokens := newTokens(t, newKey(t), issuer)
	a := NewAuthenticator(tokens)
	a.SetStore(store)
	sa := satest.Create(t, store, clusterA, "ns", "bot")
	tok, _, err := tokens.Mint(Subject{Cluster: clusterA, Namespace: "ns", Name: "bot", UID: sa.UID}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, ok, err := a.AuthenticateToken(context.Background(), tok); !ok {
			t.Fatalf("valid token refused: %v", err)
		}
	}
	satest.Delete(t, store, clusterA, "ns", "bot")
	if _, ok, _ := a.AuthenticateToken(context.Background(), tok); ok {
		t.Fatal("token accepted after its service account was deleted")
	}
}

func TestNotReadyRefuses(t *testing.T) {
	tokens := newTokens(t, newKey(t), issuer)
	tok, _, err := tokens.Mint(Subject{Cluster: clusterA, Namespace: "ns", Name: "bot", UID: "u"}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := NewAuthenticator(tokens).AuthenticateToken(context.Background(), tok); ok || err == nil {
		t.Fatalf("accepted before storage: ok=%v err=%v", ok, err)
	}
}

func TestUserInfo(t *testing.T) {
	u := UserInfo(Subject{Cluster: clusterA, Namespace: "ns", Name: "bot", UID: "uid-1"}, "jti-1")
	var _ user.Info = u
	if u.Name != "system:serviceaccount:ns:bot" || u.UID != "uid-1" ||
		!slices.Equal(u.Extra[ExtraCluster], []string{string(clusterA)}) || !slices.Equal(u.Extra[extraCredentialID], []string{"JTI=jti-1"}) {
		t.Fatalf("got %+v", u)
	}
}

// TestClaimsFormat: new tokens carry aud as an array and upstream's
// kubernetes.io claim; tokens minted in the old format (aud a string,
// wharf.dev claim only) keep verifying until they expire.
func TestClaimsFormat(t *testing.T) {
	key := newKey(t)
	tokens := newTokens(t, key, issuer)
	s := Subject{Cluster: clusterA, Namespace: "ns", Name: "bot", UID: "uid-1"}
	tok, _, err := tokens.MintBound(s, &BoundObject{Name: "anchor", UID: "sec-uid"}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, claims := payload(t, tok)
	if aud, ok := claims["aud"].([]any); !ok || len(aud) != 1 || aud[0] != issuer {
		t.Fatalf("aud = %#v, want a one-element array", claims["aud"])
	}
	k, ok := claims["kubernetes.io"].(map[string]any)
	if !ok || k["namespace"] != "ns" || k["serviceaccount"].(map[string]any)["uid"] != "uid-1" || k["secret"].(map[string]any)["name"] != "anchor" {
		t.Fatalf("kubernetes.io claim = %#v", claims["kubernetes.io"])
	}
	v, err := tokens.Verify(tok)
	if err != nil || v.Secret == nil || v.Secret.UID != "sec-uid" {
		t.Fatalf("verify: %+v %v", v, err)
	}

	old, err := jwt.Signed(tokens.signer).Claims(jwt.Claims{Issuer: issuer, Subject: s.Username(), Audience: jwt.Audience{issuer},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).
		Claims(map[string]any{"wharf.dev": binding{Cluster: string(clusterA), Namespace: "ns", ServiceAccount: ref{Name: "bot", UID: "uid-1"}}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if _, c := payload(t, old); c["aud"] != issuer {
		t.Fatalf("old-format token's aud = %#v, want a string", c["aud"])
	}
	if v, err := tokens.Verify(old); err != nil || v.Name != "bot" || v.Secret != nil {
		t.Fatalf("old-format token: %+v %v", v, err)
	}

	// The two claims must agree.
	forged, err := jwt.Signed(tokens.signer).Claims(jwt.Claims{Issuer: issuer, Subject: s.Username(),
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).
		Claims(privateClaims{Audience: audArray{issuer}, Kube: &kubeClaim{Namespace: "other", ServiceAccount: ref{Name: "bot", UID: "uid-1"}},
			Wharf: &binding{Cluster: string(clusterA), Namespace: "ns", ServiceAccount: ref{Name: "bot", UID: "uid-1"}}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(forged); err == nil {
		t.Fatal("token whose kubernetes.io and wharf.dev claims disagree verified")
	}

	// Target audiences, as upstream: the intersection, or refused.
	vault, _, err := tokens.Mint(s, []string{"vault", "other"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(vault); err == nil {
		t.Fatal("vault token verified for the hub")
	}
	if v, err := tokens.VerifyFor(vault, []string{"vault", "x"}); err != nil || !slices.Equal(v.Audiences, []string{"vault"}) {
		t.Fatalf("vault token for vault: %+v %v", v, err)
	}
}
