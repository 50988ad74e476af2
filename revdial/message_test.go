package revdial

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Message
		wantErr bool
	}{
		{"keep-alive", `{"command":"keep-alive"}` + "\n", []Message{{Command: CmdKeepAlive}}, false},
		{"no trailing newline", `{"command":"pong"}`, []Message{{Command: CmdPong}}, false},
		{"conn-ready", `{"command":"conn-ready","connPath":"/p/x"}`, []Message{{Command: CmdConnReady, ConnPath: "/p/x"}}, false},
		{"pickup-failed", `{"command":"pickup-failed","connPath":"/p/x","err":"boom"}`, []Message{{Command: CmdPickupFailed, ConnPath: "/p/x", Err: "boom"}}, false},
		{"several and blank lines", "{\"command\":\"pong\"}\n\n  \n{\"command\":\"keep-alive\"}\n", []Message{{Command: CmdPong}, {Command: CmdKeepAlive}}, false},
		{"unknown fields ignored", `{"command":"pong","extra":1}`, []Message{{Command: CmdPong}}, false},
		{"unknown command kept", `{"command":"later"}`, []Message{{Command: "later"}}, false},
		{"empty frame", "", nil, false},
		{"not json", "hello", nil, true},
		{"null", "null", nil, true},
		{"array", `[{"command":"pong"}]`, nil, true},
		{"missing command", `{"connPath":"/x"}`, nil, true},
		{"wrong type", `{"command":5}`, nil, true},
		{"good then bad", "{\"command\":\"pong\"}\n{", []Message{{Command: CmdPong}}, true},
		{"too large", strings.Repeat(" ", MaxControlMessage+1), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMessages([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, errBadMessage) {
				t.Fatalf("err %v does not wrap errBadMessage", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		tok := newToken()
		if len(tok) != 32 || seen[tok] {
			t.Fatalf("token %q: bad length or repeated", tok)
		}
		seen[tok] = true
		for _, warm := range []bool{false, true} {
			p := connPath("/services/x/pickup/", tok, warm)
			if got := tokenFromPath(p); got != tok {
				t.Fatalf("tokenFromPath(%q) = %q", p, got)
			}
			if isWarmPath(p) != warm {
				t.Fatalf("isWarmPath(%q) = %v", p, !warm)
			}
		}
	}
	for _, p := range []string{"", "/", "/pickup/short", "/pickup/" + strings.Repeat("a", 33)} {
		if tok := tokenFromPath(p); tok != "" {
			t.Errorf("tokenFromPath(%q) = %q, want none", p, tok)
		}
	}
}

// FuzzParseMessages: parsing never panics, and whatever parses survives a
// round trip through AppendLine unchanged.
func FuzzParseMessages(f *testing.F) {
	for _, s := range []string{
		`{"command":"keep-alive"}` + "\n",
		`{"command":"conn-ready","connPath":"/pickup/abc?warm=1"}`,
		`{"command":"pickup-failed","connPath":"/p","err":"x\ny"}` + "\n{\"command\":\"pong\"}",
		"\n\n", "{", `{"command":""}`, "null", `{"command":"\u2028"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		msgs, _ := ParseMessages(frame)
		var again []byte
		for _, m := range msgs {
			again = m.AppendLine(again)
		}
		if len(again) > MaxControlMessage {
			return // JSON escaping can grow a frame that was just under the limit
		}
		back, err := ParseMessages(again)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", again, err)
		}
		if len(back) != len(msgs) {
			t.Fatalf("round trip changed %d messages into %d", len(msgs), len(back))
		}
		for i := range msgs {
			if back[i] != msgs[i] {
				t.Fatalf("round trip: %+v became %+v", msgs[i], back[i])
			}
		}
	})
}
