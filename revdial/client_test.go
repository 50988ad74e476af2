package revdial

import (
	"context"
	"strings"
	"testing"
)

// TestClientRejectsForeignConnPath: a conn-ready may not send the agent,
// and the credentials its Header callback adds, to another host.
func TestClientRejectsForeignConnPath(t *testing.T) {
	cl, err := NewClient(ClientConfig{URL: "wss://hub.example/control"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []string{
		"https://evil.example/pickup/x",
		"//evil.example/pickup/x",
		"wss://evil.example/pickup/x",
		"pickup/relative",
		"",
	}
	for _, p := range tests {
		_, err := cl.openPickup(context.Background(), p)
		if err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("openPickup(%q) = %v, want a refusal", p, err)
		}
	}
}

func TestNewClientValidates(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"wss://hub.example/control", true},
		{"ws://127.0.0.1:1/control", true},
		{"https://hub.example/control", false},
		{"::not a url", false},
	}
	for _, tc := range tests {
		_, err := NewClient(ClientConfig{URL: tc.url})
		if (err == nil) != tc.ok {
			t.Errorf("NewClient(%q) err = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}
