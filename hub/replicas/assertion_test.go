package replicas

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/sdk"
)

var (
	secretA = bytes.Repeat([]byte{'a'}, 32)
	secretB = bytes.Repeat([]byte{'b'}, 32)
	alice   = sdk.Identity{User: "alice", Groups: []string{"devs", "system:authenticated"}, Tenant: "root:acme", Cluster: "c0acme"}
	bind    = Binding{Provider: "edges", Method: "GET", Path: "/whoami", Query: "x=1"}
)

func newAsserter(t *testing.T, self string, secret []byte, now time.Time) *Asserter {
	t.Helper()
	a, err := NewAsserter(self, secret)
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return now }
	return a
}

// tamper rewrites the payload of a signed assertion, keeping its MAC.
func tamper(t *testing.T, v string, edit func(string) string) string {
	t.Helper()
	p, sig, _ := strings.Cut(v, ".")
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(edit(string(raw)))) + "." + sig
}

func TestAssertionVerify(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	signer := newAsserter(t, "hub-a", secretA, now)
	sign := func(to string, b Binding, id sdk.Identity) string {
		v, err := signer.Sign(to, b, id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	good := sign("hub-b", bind, alice)
	cases := []struct {
		name     string
		value    string
		verifier *Asserter
		binding  Binding
		wantErr  string
	}{
		{name: "valid", value: good},
		{name: "missing", value: "", wantErr: "malformed"},
		{name: "no signature", value: strings.Split(good, ".")[0], wantErr: "malformed"},
		{name: "garbage signature", value: strings.Split(good, ".")[0] + ".!!", wantErr: "malformed signature"},
		{name: "tampered user", value: tamper(t, good, func(s string) string { return strings.Replace(s, `"alice"`, `"admin"`, 1) }), wantErr: "bad signature"},
		{name: "tampered group", value: tamper(t, good, func(s string) string { return strings.Replace(s, `"devs"`, `"system:masters"`, 1) }), wantErr: "bad signature"},
		{name: "signature from other assertion", value: strings.Split(sign("hub-b", bind, sdk.Identity{User: "mallory"}), ".")[0] + "." + strings.Split(good, ".")[1], wantErr: "bad signature"},
		{name: "wrong secret", value: good, verifier: newAsserter(t, "hub-b", secretB, now), wantErr: "bad signature"},
		{name: "expired", value: good, verifier: newAsserter(t, "hub-b", secretA, now.Add(assertionTTL)), wantErr: "expired"},
		{name: "other audience", value: good, verifier: newAsserter(t, "hub-c", secretA, now), wantErr: "addressed to"},
		{name: "other provider", value: good, binding: Binding{Provider: "hello", Method: "GET", Path: "/whoami", Query: "x=1"}, wantErr: "another request"},
		{name: "other method", value: good, binding: Binding{Provider: "edges", Method: "POST", Path: "/whoami", Query: "x=1"}, wantErr: "another request"},
		{name: "other path", value: good, binding: Binding{Provider: "edges", Method: "GET", Path: "/admin", Query: "x=1"}, wantErr: "another request"},
		{name: "other query", value: good, binding: Binding{Provider: "edges", Method: "GET", Path: "/whoami"}, wantErr: "another request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.verifier
			if v == nil {
				v = newAsserter(t, "hub-b", secretA, now)
			}
			b := tc.binding
			if b == (Binding{}) {
				b = bind
			}
			id, err := v.Verify(tc.value, b)
			if tc.wantErr == "" {
				if err != nil || !reflect.DeepEqual(id, alice) {
					t.Fatalf("Verify = %+v, %v; want %+v", id, err, alice)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidAssertion) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Verify = %+v, %v; want error containing %q", id, err, tc.wantErr)
			}
			if id.User != "" {
				t.Fatalf("a refused assertion returned identity %+v", id)
			}
		})
	}
}

// An assertion is accepted once: the holder remembers its nonce.
func TestAssertionReplay(t *testing.T) {
	now := time.Now()
	a := newAsserter(t, "hub-a", secretA, now)
	b := newAsserter(t, "hub-b", secretA, now)
	v, err := a.Sign("hub-b", bind, alice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(v, bind); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(v, bind); err == nil || !strings.Contains(err.Error(), "replayed") {
		t.Fatalf("replay accepted: %v", err)
	}
	// Two assertions for the same request differ (fresh nonce) and both pass.
	v2, _ := a.Sign("hub-b", bind, alice)
	if v2 == v {
		t.Fatal("two signatures are identical")
	}
	if _, err := b.Verify(v2, bind); err != nil {
		t.Fatal(err)
	}
}

func TestAssertionRefusals(t *testing.T) {
	if _, err := NewAsserter("hub-a", secretA[:31]); err == nil {
		t.Error("short secret accepted")
	}
	if _, err := NewAsserter("", secretA); err == nil {
		t.Error("empty name accepted")
	}
	a := newAsserter(t, "hub-a", secretA, time.Now())
	if _, err := a.Sign("hub-b", bind, sdk.Identity{}); err == nil {
		t.Error("empty identity signed")
	}
}
