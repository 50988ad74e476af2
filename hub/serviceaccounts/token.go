package serviceaccounts

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
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

// kubeClaim is upstream's "kubernetes.io" private claim, so that tools
// reading a Kubernetes service-account token (and kube's own claim
// structure checks) understand the hub's. The hub itself verifies the
// wharf.dev claim, which adds the logical cluster; both must agree.
type kubeClaim struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount ref    `json:"serviceaccount"`
	Secret         *ref   `json:"secret,omitempty"`
}

type privateClaims struct {
	// Audience is written as an array even with one entry, as upstream's
	// tokens; go-jose writes a lone audience as a string. Reading accepts
	// both (jwt.Claims), so tokens minted before keep verifying.
	Audience audArray   `json:"aud,omitempty"`
	Kube     *kubeClaim `json:"kubernetes.io,omitempty"`
	Wharf    *binding   `json:"wharf.dev,omitempty"`
}

// audArray is an audience list that is always written as a JSON array and
// read from an array or a lone string.
type audArray []string

func (a audArray) MarshalJSON() ([]byte, error) { return json.Marshal([]string(a)) }

func (a *audArray) UnmarshalJSON(b []byte) error {
	var v jwt.Audience
	if err := v.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("aud claim: %w", err)
	}
	*a = audArray(v)
	return nil
}

// BoundObject is an object a token dies with (TokenRequest's
// boundObjectRef): only Secrets, in the ServiceAccount's namespace.
type BoundObject struct {
	Name string
	UID  types.UID
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
	return t.MintBound(s, nil, audiences, ttl)
}

// MintBound is Mint for a token that also dies with secret (nil: none).
func (t *Tokens) MintBound(s Subject, secret *BoundObject, audiences []string, ttl time.Duration) (string, time.Time, error) {
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
		Issuer: t.issuer, Subject: s.Username(), ID: jti,
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(exp),
	}
	sa := ref{Name: s.Name, UID: string(s.UID)}
	priv := privateClaims{
		Audience: slices.Clone(audiences),
		Kube:     &kubeClaim{Namespace: s.Namespace, ServiceAccount: sa},
		Wharf:    &binding{Cluster: string(s.Cluster), Namespace: s.Namespace, ServiceAccount: sa},
	}
	if secret != nil {
		priv.Kube.Secret = &ref{Name: secret.Name, UID: string(secret.UID)}
	}
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
	// Audiences are the token's audiences among those asked for.
	Audiences []string
	// Secret is the Secret the token is bound to, if any.
	Secret *BoundObject
}

// errNotOurs means the token is not a hub service-account token at all;
// the union then tries the next authenticator without logging a failure.
var errNotOurs = errors.New("not a hub service-account token")

// Verify checks a token's signature, algorithm, issuer, audience (one of
// the hub's API audiences), times and binding claims. Whether the
// ServiceAccount still exists is the authenticator's job.
func (t *Tokens) Verify(raw string) (*Verified, error) { return t.VerifyFor(raw, nil) }

// VerifyFor is Verify for the target audiences wanted (nil: the hub's API
// audiences), as upstream: the token must carry at least one of them, and
// the verified audiences are the intersection.
func (t *Tokens) VerifyFor(raw string, wanted []string) (*Verified, error) {
	if len(wanted) == 0 {
		wanted = t.audiences
	}
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
	for _, a := range wanted {
		if std.Audience.Contains(a) && !slices.Contains(auds, a) {
			auds = append(auds, a)
		}
	}
	if len(auds) == 0 {
		return nil, fmt.Errorf("service-account token: audiences %q are not among the target audiences %q", []string(std.Audience), wanted)
	}
	b := priv.Wharf
	if b == nil || !cluster.IsValidID(b.Cluster) || b.Namespace == "" || b.ServiceAccount.Name == "" || b.ServiceAccount.UID == "" {
		return nil, errors.New("service-account token: incomplete binding claims")
	}
	s := Subject{Cluster: cluster.ID(b.Cluster), Namespace: b.Namespace, Name: b.ServiceAccount.Name, UID: types.UID(b.ServiceAccount.UID)}
	if std.Subject != s.Username() {
		return nil, errors.New("service-account token: subject does not match its binding")
	}
	v := &Verified{Subject: s, ID: std.ID, Audiences: auds}
	// Tokens minted before the kubernetes.io claim have none; when there
	// is one it must say what wharf.dev says, and may bind a Secret.
	if k := priv.Kube; k != nil {
		if k.Namespace != s.Namespace || k.ServiceAccount.Name != s.Name || k.ServiceAccount.UID != string(s.UID) {
			return nil, errors.New("service-account token: kubernetes.io claim does not match its binding")
		}
		if k.Secret != nil {
			if k.Secret.Name == "" || k.Secret.UID == "" {
				return nil, errors.New("service-account token: incomplete secret binding")
			}
			v.Secret = &BoundObject{Name: k.Secret.Name, UID: types.UID(k.Secret.UID)}
		}
	}
	return v, nil
}

func newJTI() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
