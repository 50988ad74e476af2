package edges

import (
	"io/fs"
	"strings"
	"testing"
)

// TestUI: the portal imports main.js and expects it to define
// <wharf-provider-edges> (sdk/ui.go) without inline markup.
func TestUI(t *testing.T) {
	m := New(Options{}).Manifest()
	if m.UI == nil {
		t.Fatal("the edges provider has no UI")
	}
	b, err := fs.ReadFile(m.UI, "main.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`defineProvider("edges"`, `from "/ui/shell/provider.js"`, "/join-token", "api.watch"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("main.js lacks %s", want)
		}
	}
	for _, bad := range []string{"innerHTML", "localStorage", "document.cookie"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("main.js uses %s", bad)
		}
	}
}
