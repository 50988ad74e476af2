package hangup

import (
	"net/http"
	"testing"
)

func TestUnlessHeld(t *testing.T) {
	for _, tc := range []struct {
		name string
		held bool
		want string
	}{
		{"held: the connection stays", true, ""},
		{"answered at once: it closes", false, "close"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			UnlessHeld(h, tc.held)
			if got := h.Get("Connection"); got != tc.want {
				t.Errorf("Connection: %q, want %q", got, tc.want)
			}
		})
	}
}
