package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
)

func TestNeedsRefresh(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		e    tokencache.Entry
		want bool
	}{
		{"valid for long", tokencache.Entry{IDToken: "x", Expiry: now.Add(time.Hour)}, false},
		{"about to expire", tokencache.Entry{IDToken: "x", Expiry: now.Add(refreshBefore / 2)}, true},
		{"expired", tokencache.Entry{IDToken: "x", Expiry: now.Add(-time.Minute)}, true},
		{"no token", tokencache.Entry{Expiry: now.Add(time.Hour)}, true},
	} {
		if got := needsRefresh(tc.e, now); got != tc.want {
			t.Errorf("%s: needsRefresh = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestCredentialFromCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c := tokencache.Cache{Dir: dir}
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := c.Store(tokencache.Key("https://idp.example", "cli"), tokencache.Entry{IDToken: "cached-id-token", Expiry: exp}); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "credential", "--issuer=https://idp.example", "--client-id=cli", "--cache-dir="+dir)
	if err != nil {
		t.Fatal(err)
	}
	var ec struct {
		APIVersion, Kind string
		Status           struct {
			Token               string
			ExpirationTimestamp time.Time
		}
	}
	if err := json.Unmarshal([]byte(out), &ec); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if ec.APIVersion != "client.authentication.k8s.io/v1" || ec.Kind != "ExecCredential" || ec.Status.Token != "cached-id-token" || !ec.Status.ExpirationTimestamp.Equal(exp) {
		t.Errorf("ExecCredential = %+v", ec)
	}
	// Another client id has no entry: the user must log in.
	if _, err := run(t, "credential", "--issuer=https://idp.example", "--client-id=other", "--cache-dir="+dir); err == nil || !strings.Contains(err.Error(), "wharf login") {
		t.Errorf("credential without a login: %v", err)
	}
}
