package login

import "testing"

func TestSafeRedirect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" means refused
	}{
		{"", "/"},
		{"/", "/"},
		{"/portal", "/portal"},
		{"/portal/", "/portal/"},
		{"/clusters/root/api?watch=1#top", "/clusters/root/api?watch=1#top"},
		{"/a/./b", "/a/b"},
		{"/a//b", "/a/b"},
		{"/search%20x", "/search%20x"},
		{"//evil.example", ""},
		{"///evil.example", ""},
		{"https://evil.example", ""},
		{"https://evil.example/", ""},
		{"http:evil.example", ""},
		{"javascript:alert(1)", ""},
		{"evil.example", ""},
		{"portal", ""},
		{"/\\evil.example", ""},
		{"\\\\evil.example", ""},
		{"/a\\b", ""},
		{"/%2F%2Fevil.example", ""},
		{"/%2f/evil.example", ""},
		{"%2F%2Fevil.example", ""},
		{"/%5Cevil.example", ""},
		{"/%5cevil.example", ""},
		{"/%252F%252Fevil.example", ""},
		{"/%25252F%25252Fevil.example", ""},
		{"/..", ""},
		{"/../evil", ""},
		{"/a/../b", ""},
		{"/%2e%2e/evil", ""},
		{"/a\tb", ""},
		{"/\t/evil.example", ""},
		{"/\n/evil.example", ""},
		{"/%0a/evil", ""},
		{"/%00", ""},
		{"/%zz", ""},
		{"/@evil.example", "/@evil.example"},
	} {
		got, ok := SafeRedirect(tc.in)
		if tc.want == "" {
			if ok {
				t.Errorf("SafeRedirect(%q) = %q, want refused", tc.in, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("SafeRedirect(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}
