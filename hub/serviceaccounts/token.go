package serviceaccounts

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Token lifetimes, as upstream's TokenRequest: an hour unless asked
// otherwise, never under ten minutes.
const (
	DefaultExpiration = time.Hour
	MinExpiration     = 10 * time.Minute
	// DefaultMaxExpiration caps what a client may ask for.
	DefaultMaxExpiration = 48 * time.Hour
	// leeway tolerates clock skew between replicas for exp, nbf and iat.
	leeway = time.Minute
)

// Subject is the ServiceAccount a token is bound to.
type Subject struct {
	Cluster   cluster.ID
	Namespace string
	Name      string
	UID       types.UID
}

// Username is the Kubernetes user name of the ServiceAccount.
func (s Subject) Username() string { return serviceaccount.MakeUsername(s.Namespace, s.Name) }

// binding is the private claim tying a token to one ServiceAccount.
type binding struct {
	Cluster        string `json:"cluster"`
	Namespace      string `json:"namespace"`
	ServiceAccount ref    `json:"serviceaccount"`
}

type ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

type privateClaims struct {
	Wharf *binding `json:"wharf.dev,omitempty"`
}

// Tokens mints and verifies the hub's service-account tokens.
type Tokens struct {
	key       *Key
	signer    jose.Signer
	issuer    string
	audiences []string
	now       func() time.Time
}

// NewTokens signs with key as issuer. apiAudiences are the audiences a
// token must carry to authenticate to the hub; the first is the default
// audience of minted tokens.
func NewTokens(key *Key, issuer string, apiAudiences []string) (*Tokens, error) {
	if issuer == "" || len(apiAudiences) == 0 {
		return nil, errors.New("service-account tokens need an issuer and at least one API audience")
	}
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), key.ID())
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.Algorithm(), Key: key.private}, opts)
	if err != nil {
		return nil, fmt.Errorf("service-account token signer: %w", err)
	}
	return &Tokens{key: key, signer: signer, issuer: issuer, audiences: slices.Clone(apiAudiences), now: time.Now}, nil
}

// Issuer is the iss claim of every token.
func (t *Tokens) Issuer() string { return t.issuer }

// APIAudiences are the audiences the hub accepts.
func (t *Tokens) APIAudiences() []string { return slices.Clone(t.audiences) }

// Mint signs a token for s, valid for ttl from now, for audiences (the
// hub's default audience when empty).
func (t *Tokens) Mint(s Subject, audiences []string, ttl time.Duration) (string, time.Time, error) {
	if len(audiences) == 0 {
		audiences = t.audiences[:1]
	}
	jti, err := newJTI()
	if err != nil {
		return "", time.Time{}, err
	}
	now := t.now().Truncate(time.Second)
	exp := now.Add(ttl)
	std := jwt.Claims{
		Issuer: t.issuer, Subject: s.Username(), Audience: jwt.Audience(audiences), ID: jti,
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(exp),
	}
	priv := privateClaims{Wharf: &binding{
		Cluster: string(s.Cluster), Namespace: s.Namespace, ServiceAccount: ref{Name: s.Name, UID: string(s.UID)},
	}}
	tok, err := jwt.Signed(t.signer).Claims(std).Claims(priv).Serialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("signing service-account token: %w", err)
	}
	return tok, exp, nil
}

// Verified is what a valid token asserts.
type Verified struct {
	Subject
	// ID is the token's jti, for audit.
	ID string
	// Audiences are the token's audiences the hub accepts.
	Audiences []string
}

// errNotOurs means the token is not a hub service-account token at all;
// the union then tries the next authenticator without logging a failure.
var errNotOurs = errors.New("not a hub service-account token")

// Verify checks a token's signature, algorithm, issuer, audience, times
// and binding claims. Whether the ServiceAccount still exists is the
// authenticator's job.
func (t *Tokens) Verify(raw string) (*Verified, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{t.key.Algorithm()})
	if err != nil {
		return nil, errNotOurs
	}
	// Cheap pre-check so OIDC ID tokens pass through untouched; nothing
	// read here is trusted before the signature check below.
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != t.issuer {
		return nil, errNotOurs
	}
	var std jwt.Claims
	var priv privateClaims
	if err := tok.Claims(t.key.Public(), &std, &priv); err != nil {
		return nil, fmt.Errorf("service-account token: %w", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: t.issuer, Time: t.now()}, leeway); err != nil {
		return nil, fmt.Errorf("service-account token: %w", err)
	}
	if std.Expiry == nil {
		return nil, errors.New("service-account token: no expiry")
	}
	var auds []string
	for _, a := range t.audiences {
		if std.Audience.Contains(a) {
			auds = append(auds, a)
		}
	}
	if len(auds) == 0 {
		return nil, errors.New("service-account token: audience is not the hub's")
	}
	b := priv.Wharf
	if b == nil || !cluster.IsValidID(b.Cluster) || b.Namespace == "" || b.ServiceAccount.Name == "" || b.ServiceAccount.UID == "" {
		return nil, errors.New("service-account token: incomplete binding claims")
	}
	s := Subject{Cluster: cluster.ID(b.Cluster), Namespace: b.Namespace, Name: b.ServiceAccount.Name, UID: types.UID(b.ServiceAccount.UID)}
	if std.Subject != s.Username() {
		return nil, errors.New("service-account token: subject does not match its binding")
	}
	return &Verified{Subject: s, ID: std.ID, Audiences: auds}, nil
}

func newJTI() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
