package testkit_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/testkit"
)

type whoami struct{}

func (whoami) Manifest() sdk.Manifest {
	return sdk.Manifest{Name: "whoami", Backend: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := sdk.IdentityFrom(r)
		_, _ = fmt.Fprintf(w, "%s in %s", id.User, id.Tenant)
	})}
}

// How a provider author tests a backend against real identity headers.
func TestExampleWhoami(t *testing.T) {
	hub := testkit.Start(t, whoami{}, testkit.Options{
		Users: map[string]sdk.Identity{"alice-token": {User: "alice", Tenant: "root:acme"}},
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, hub.BackendURL("/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("X-Kedge-User", "mallory") // stripped by the stand-in
	resp, err := hub.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if got := string(body); got != "alice in root:acme" {
		t.Fatalf("got %q", got)
	}
}
