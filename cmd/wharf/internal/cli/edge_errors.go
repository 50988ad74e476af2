package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlError is an API error worded the way kubectl prints it
// ("Error from server (NotFound): ..."). main prints it without the
// "wharf:" prefix so the CLI reads like kubectl for the same failure.
type kubectlError struct{ err error }

func (e *kubectlError) Error() string {
	var s apierrors.APIStatus
	if !errors.As(e.err, &s) {
		return e.err.Error()
	}
	st := s.Status()
	if st.Reason == "" || st.Reason == metav1.StatusReasonUnknown {
		return "Error from server: " + st.Message
	}
	return fmt.Sprintf("Error from server (%s): %s", st.Reason, st.Message)
}

func (e *kubectlError) Unwrap() error { return e.err }

// fromServer wraps API errors as kubectlError and leaves others alone.
func fromServer(err error) error {
	var s apierrors.APIStatus
	if err == nil || !errors.As(err, &s) {
		return err
	}
	return &kubectlError{err: err}
}

// statusFromResponse turns a non-2xx answer of the provider backend into an
// API error: the hub and the provider answer with Status JSON; anything else
// (a proxy in between) becomes a generic error carrying the HTTP status.
func statusFromResponse(code int, body []byte) error {
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		return &apierrors.StatusError{ErrStatus: st}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: int32(code), Reason: reasonForCode(code), Message: msg,
	}}
}

// reasonForCode names the common refusals; other codes stay Unknown, which
// kubectl prints as a bare "Error from server: <message>".
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	default:
		return metav1.StatusReasonUnknown
	}
}

// notServed explains a 404 for the edges resource itself: the workspace has
// not enabled the edges provider, which kubectl would only report as "the
// server could not find the requested resource".
func notServed(err error, c *hubConn) error {
	if !apierrors.IsNotFound(err) {
		return fromServer(err)
	}
	var s apierrors.APIStatus
	if errors.As(err, &s) && s.Status().Details != nil && s.Status().Details.Name != "" {
		return fromServer(err) // a named edge is missing, not the API
	}
	return fmt.Errorf("the edges API is not served in %s; enable it with a ProviderBinding (spec.provider: edges) in that workspace: %w", c.rest.Host, fromServer(err))
}

// exitError ends the process with Code and prints nothing: `wharf ssh`
// returns the remote command's status this way.
type exitError struct{ Code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the process status for an error RunE returned: a remote
// command's status for `wharf ssh`, else 1.
func ExitCode(err error) int {
	var x *exitError
	if errors.As(err, &x) {
		return x.Code
	}
	if err != nil {
		return 1
	}
	return 0
}

// Message is what main prints for err on stderr: "" for an exit status
// passed through, kubectl's wording for API errors, else "wharf: <err>".
func Message(err error) string {
	var x *exitError
	if err == nil || errors.As(err, &x) {
		return ""
	}
	// A bare API error reads exactly like kubectl's; one the CLI wrapped
	// with advice keeps the advice.
	if k, ok := err.(*kubectlError); ok {
		return k.Error()
	}
	return "wharf: " + err.Error()
}
