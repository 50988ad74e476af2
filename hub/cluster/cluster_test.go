package cluster

import (
	"context"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
	}{
		{"root", false},
		{"root:acme", false},
		{"root:acme:team-a", false},
		{"", true},
		{"acme", true},
		{"root:", true},
		{"root::a", true},
		{"root:Acme", true},
		{"root:a_b", true},
		{"root:-a", true},
		{"root:" + string(make([]byte, 64)), true},
	}
	for _, tt := range tests {
		_, err := ParsePath(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePath(%q) err=%v, wantErr=%v", tt.in, err, tt.wantErr)
		}
	}
}

func TestPathParent(t *testing.T) {
	tests := []struct {
		in, parent, name string
		ok               bool
	}{
		{"root", "", "", false},
		{"root:a", "root", "a", true},
		{"root:a:b", "root:a", "b", true},
	}
	for _, tt := range tests {
		p, n, ok := Path(tt.in).Parent()
		if string(p) != tt.parent || n != tt.name || ok != tt.ok {
			t.Errorf("Parent(%q) = %q,%q,%v want %q,%q,%v", tt.in, p, n, ok, tt.parent, tt.name, tt.ok)
		}
	}
	if got := Path("root:a").Join("b"); got != "root:a:b" {
		t.Errorf("Join = %q", got)
	}
}

func TestIDs(t *testing.T) {
	seen := map[ID]bool{}
	for i := 0; i < 1000; i++ {
		id, err := NewID()
		if err != nil {
			t.Fatal(err)
		}
		if !IsValidID(string(id)) {
			t.Fatalf("NewID returned invalid id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "root", "ABCDEFGHIJKLMNOP", "abcdefghijklmno", "abcdefghijklmnopq", "abcdefghijklmno-", string(Global)} {
		if IsValidID(bad) {
			t.Errorf("IsValidID(%q) = true", bad)
		}
	}
}

func TestContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := From(ctx); ok {
		t.Fatal("empty context has a cluster")
	}
	if _, ok := From(WithCluster(ctx, "")); ok {
		t.Fatal("empty id must not count as a cluster")
	}
	if id, ok := From(WithCluster(ctx, "abc")); !ok || id != "abc" {
		t.Fatalf("From = %q,%v", id, ok)
	}
	if IsWildcard(ctx) || !IsWildcard(WithWildcard(ctx)) {
		t.Fatal("wildcard flag not carried")
	}
}
