package login

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

func TestRedactOAuth(t *testing.T) {
	body := []byte(`{"error":"invalid_grant","echo":"refresh-token-secret"}`)
	err := fmt.Errorf("wrapped: %w", &oauth2.RetrieveError{Response: &http.Response{Status: "400 Bad Request"}, Body: body, ErrorCode: "invalid_grant"})
	got := redactOAuth(err).Error()
	if strings.Contains(got, "refresh-token-secret") || !strings.Contains(got, "invalid_grant") || !strings.Contains(got, "400") {
		t.Fatalf("redacted error %q", got)
	}
	plain := errors.New("dial tcp: refused")
	if redactOAuth(plain) != plain {
		t.Fatal("a non-OAuth error must pass unchanged")
	}
}
