package replicas

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/wharfhub/wharf/sdk"
)

// AssertionHeader carries a replica's signed identity assertion on a
// forwarded request. Providers never see it: the holder strips it.
const AssertionHeader = "X-Wharf-Replica-Assertion"

const (
	// assertionTTL is how long an assertion is valid: a hop is one request,
	// so only clock skew between replicas needs room.
	assertionTTL = 30 * time.Second
	// minSecret is the shortest shared secret accepted.
	minSecret = 32
	// macContext separates these MACs from any other use of the secret.
	macContext = "wharf.dev/replica-assertion/v1\n"
)

// Binding ties an assertion to one forwarded request.
type Binding struct {
	Provider string
	Method   string
	// Path is the cleaned path under the provider's prefix, e.g. "/whoami".
	Path  string
	Query string
	// OriginalPath is the client's path of an aggregated request (the
	// hub's per-workspace API routing), which the holder passes on as
	// sdk.HeaderOriginalPath; "" for a backend proxy request. Binding it
	// means a replica can only be made to assert it by another replica.
	OriginalPath string
}

// claims is the signed payload. Short JSON names keep the header small.
type claims struct {
	Issuer   string   `json:"iss"`
	Audience string   `json:"aud"`
	Expiry   int64    `json:"exp"` // unix milliseconds
	Nonce    string   `json:"nonce"`
	Provider string   `json:"prov"`
	Method   string   `json:"m"`
	Path     string   `json:"p"`
	Query    string   `json:"q,omitempty"`
	Original string   `json:"o,omitempty"`
	User     string   `json:"u"`
	Groups   []string `json:"g,omitempty"`
	Tenant   string   `json:"t,omitempty"`
	Cluster  string   `json:"c,omitempty"`
}

// Asserter signs assertions as one replica and verifies those addressed to
// it. It remembers accepted nonces until they expire, so it is one per
// replica and safe for concurrent use.
type Asserter struct {
	self   string
	secret []byte
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // nonce → expiry
}

// NewAsserter returns the asserter of replica self with the shared secret.
func NewAsserter(self string, secret []byte) (*Asserter, error) {
	if self == "" {
		return nil, errors.New("replicas: empty replica name")
	}
	if len(secret) < minSecret {
		return nil, fmt.Errorf("replicas: shared secret has %d bytes, want at least %d", len(secret), minSecret)
	}
	return &Asserter{self: self, secret: append([]byte(nil), secret...), now: time.Now, seen: map[string]time.Time{}}, nil
}

// Sign returns the assertion of id for one request forwarded to replica to.
func (a *Asserter) Sign(to string, b Binding, id sdk.Identity) (string, error) {
	if id.User == "" {
		return "", errors.New("replicas: refusing to assert an empty user")
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("replicas: nonce: %w", err)
	}
	c := claims{
		Issuer: a.self, Audience: to, Expiry: a.now().Add(assertionTTL).UnixMilli(),
		Nonce:    base64.RawURLEncoding.EncodeToString(nonce[:]),
		Provider: b.Provider, Method: b.Method, Path: b.Path, Query: b.Query, Original: b.OriginalPath,
		User: id.User, Groups: id.Groups, Tenant: id.Tenant, Cluster: id.Cluster,
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("replicas: encoding assertion: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(a.mac(p)), nil
}

func (a *Asserter) mac(payload string) []byte {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(macContext))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// ErrInvalidAssertion is wrapped by every Verify failure.
var ErrInvalidAssertion = errors.New("invalid replica assertion")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidAssertion, fmt.Sprintf(format, args...))
}

// Verify checks an assertion received by this replica for the request b
// and returns the identity it carries. Each assertion is accepted once.
func (a *Asserter) Verify(value string, b Binding) (sdk.Identity, error) {
	p, sig, ok := strings.Cut(value, ".")
	if !ok || p == "" {
		return sdk.Identity{}, invalid("malformed")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return sdk.Identity{}, invalid("malformed signature")
	}
	// Signature first, in constant time: nothing unauthenticated is parsed.
	if !hmac.Equal(got, a.mac(p)) {
		return sdk.Identity{}, invalid("bad signature")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return sdk.Identity{}, invalid("malformed payload")
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return sdk.Identity{}, invalid("payload: %v", err)
	}
	now := a.now()
	switch {
	case c.Audience != a.self:
		return sdk.Identity{}, invalid("addressed to replica %q", c.Audience)
	case now.UnixMilli() >= c.Expiry:
		return sdk.Identity{}, invalid("expired")
	case c.Expiry > now.Add(2*assertionTTL).UnixMilli():
		return sdk.Identity{}, invalid("expiry too far ahead")
	case c.Provider != b.Provider || c.Method != b.Method || c.Path != b.Path || c.Query != b.Query ||
		c.Original != b.OriginalPath:
		return sdk.Identity{}, invalid("bound to another request")
	case c.User == "" || c.Nonce == "":
		return sdk.Identity{}, invalid("no user or nonce")
	}
	if !a.remember(c.Nonce, time.UnixMilli(c.Expiry), now) {
		return sdk.Identity{}, invalid("replayed")
	}
	return sdk.Identity{User: c.User, Groups: c.Groups, Tenant: c.Tenant, Cluster: c.Cluster}, nil
}

// remember records nonce until exp and reports whether it was new.
// Expired nonces are dropped as the map grows, so memory follows the
// request rate over one TTL.
func (a *Asserter) remember(nonce string, exp, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.seen[nonce]; dup {
		return false
	}
	if len(a.seen) >= 1024 && len(a.seen)%1024 == 0 {
		for n, e := range a.seen {
			if !now.Before(e) {
				delete(a.seen, n)
			}
		}
	}
	a.seen[nonce] = exp
	return true
}
