package sdk_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/wharfhub/wharf/sdk"
)

func TestIdentityFrom(t *testing.T) {
	tests := []struct {
		name   string
		hdr    http.Header
		want   sdk.Identity
		wantOK bool
	}{
		{name: "none", hdr: http.Header{}, want: sdk.Identity{}},
		{name: "full", wantOK: true,
			hdr:  http.Header{"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"a", "b"}, "X-Kedge-Tenant": {"root:acme"}, "X-Kedge-Cluster": {"c1"}},
			want: sdk.Identity{User: "alice", Groups: []string{"a", "b"}, Tenant: "root:acme", Cluster: "c1"}},
		{name: "comma-joined groups", wantOK: true,
			hdr:  http.Header{"X-Kedge-User": {"bob"}, "X-Kedge-Groups": {"a, b,,c", " d "}},
			want: sdk.Identity{User: "bob", Groups: []string{"a", "b", "c", "d"}}},
		{name: "groups without user", hdr: http.Header{"X-Kedge-Groups": {"a"}},
			want: sdk.Identity{Groups: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{Header: tt.hdr}
			got, ok := sdk.IdentityFrom(r)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("IdentityFrom = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestStripIdentity(t *testing.T) {
	tests := []struct {
		name string
		in   http.Header // raw map: keys may be non-canonical
		want http.Header
	}{
		{name: "canonical", in: http.Header{"X-Kedge-User": {"m"}, "Accept": {"*/*"}}, want: http.Header{"Accept": {"*/*"}}},
		{name: "any case", in: http.Header{"x-kedge-user": {"m"}, "X-KEDGE-TENANT": {"t"}, "x-KeDgE-whatever": {"w"}}, want: http.Header{}},
		{name: "underscores", in: http.Header{"X_Kedge_User": {"m"}, "x_kedge_groups": {"g"}, "X-Kedge_Tenant": {"t"}, "X_Kedgey": {"ok"}},
			want: http.Header{"X_Kedgey": {"ok"}}},
		{name: "prefix only", in: http.Header{"X-Kedgey": {"ok"}, "X-Kedge": {"ok"}}, want: http.Header{"X-Kedgey": {"ok"}, "X-Kedge": {"ok"}}},
		{name: "connection tokens", in: http.Header{"Connection": {"keep-alive, X-Kedge-User", "x-kedge-groups"}, "x-kedge-groups": {"g"}},
			want: http.Header{"Connection": {"keep-alive"}}},
		{name: "connection only identity", in: http.Header{"Connection": {"X-Kedge-User"}}, want: http.Header{}},
		{name: "authorization kept", in: http.Header{"Authorization": {"Bearer t"}}, want: http.Header{"Authorization": {"Bearer t"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.in.Clone()
			sdk.StripIdentity(h)
			if !reflect.DeepEqual(h, tt.want) {
				t.Fatalf("got %v, want %v", h, tt.want)
			}
		})
	}
}

// SetIdentity must survive a proxy that drops Connection-named headers after
// injection (httputil.ReverseProxy with a Director does exactly that).
func TestSetIdentitySurvivesHopByHopRemoval(t *testing.T) {
	h := http.Header{"Connection": {"X-Kedge-User, X-Kedge-Tenant"}, "X-Kedge-User": {"mallory"}}
	id := sdk.Identity{User: "alice", Groups: []string{"g1", "g2"}, Tenant: "root:a", Cluster: "c"}
	sdk.SetIdentity(h, id)
	for _, v := range h.Values("Connection") { // what the proxy would do next
		h.Del(v)
	}
	got, ok := sdk.IdentityFrom(&http.Request{Header: h})
	if !ok || !reflect.DeepEqual(got, id) {
		t.Fatalf("after hop-by-hop removal: %+v %v, want %+v", got, ok, id)
	}

	h = http.Header{"X-Kedge-User": {"mallory"}}
	sdk.SetIdentity(h, sdk.Identity{})
	if len(h) != 0 {
		t.Fatalf("empty identity should only strip, got %v", h)
	}
}
