package tenantfilter

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// Config is the plugin's provider config (see the package doc). Option
// fields are named like the standalone flags, in camelCase.
type Config struct {
	Clusters []Cluster `json:"clusters,omitempty"`

	CapsuleConfigurationName  string          `json:"capsuleConfigurationName,omitempty"`
	RequireCapsuleUser        *bool           `json:"requireCapsuleUser,omitempty"`
	IgnoredUserGroup          []string        `json:"ignoredUserGroup,omitempty"`
	IgnoredUsername           []string        `json:"ignoredUsername,omitempty"`
	ImpersonationGroupRegexp  string          `json:"impersonationGroupRegexp,omitempty"`
	IgnoredImpersonationGroup []string        `json:"ignoredImpersonationGroup,omitempty"`
	EnableReflector           bool            `json:"enableReflector,omitempty"`
	DisableCaching            bool            `json:"disableCaching,omitempty"`
	FeatureGates              map[string]bool `json:"featureGates,omitempty"`
	AllowedPaths              []string        `json:"allowedPaths,omitempty"`
	ClientConnectionQPS       float32         `json:"clientConnectionQps,omitempty"`
	ClientConnectionBurst     int             `json:"clientConnectionBurst,omitempty"`
	RolebindingsResyncPeriod  string          `json:"rolebindingsResyncPeriod,omitempty"`
}

// Cluster is one downstream: its URL name and the kubeconfig holding the
// provider's credential there.
type Cluster struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
}

var knownGates = map[string]bool{
	core.GateProxyClusterScoped: true, core.GateProxyAllNamespaced: true, core.GateSkipImpersonationReview: true,
}

// ParseConfig decodes and validates a provider config (YAML or JSON,
// unknown fields rejected). Empty input is the empty config.
func ParseConfig(b []byte) (*Config, error) {
	c := &Config{}
	if len(b) > 0 {
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return nil, fmt.Errorf("tenant-filter config: %w", err)
		}
	}
	return c, c.Validate()
}

// Validate checks names and options.
func (c *Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, cl := range c.Clusters {
		if msgs := validation.IsDNS1123Label(cl.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("clusters[%d].name %q: %v", i, cl.Name, msgs))
		}
		if seen[cl.Name] {
			errs = append(errs, fmt.Errorf("clusters[%d].name %q: duplicate", i, cl.Name))
		}
		seen[cl.Name] = true
		if cl.Kubeconfig == "" {
			errs = append(errs, fmt.Errorf("clusters[%d].kubeconfig: required", i))
		}
	}
	for g := range c.FeatureGates {
		if !knownGates[g] {
			errs = append(errs, fmt.Errorf("featureGates: unknown gate %q", g))
		}
	}
	if c.RolebindingsResyncPeriod != "" {
		if _, err := time.ParseDuration(c.RolebindingsResyncPeriod); err != nil {
			errs = append(errs, fmt.Errorf("rolebindingsResyncPeriod: %w", err))
		}
	}
	return errors.Join(errs...)
}

// CoreOptions maps the config onto core.Options, with the standalone
// flags' defaults for what it leaves out.
func (c *Config) CoreOptions() core.Options {
	o := core.Options{
		CapsuleConfigurationName:   c.CapsuleConfigurationName,
		RequireCapsuleUser:         true,
		IgnoredUserGroups:          c.IgnoredUserGroup,
		IgnoredUsernames:           c.IgnoredUsername,
		ImpersonationGroupRegexp:   c.ImpersonationGroupRegexp,
		IgnoredImpersonationGroups: c.IgnoredImpersonationGroup,
		EnableReflector:            c.EnableReflector,
		DisableCaching:             c.DisableCaching,
		FeatureGates:               map[string]bool{},
		AllowedPaths:               c.AllowedPaths,
		ClientQPS:                  c.ClientConnectionQPS,
		ClientBurst:                c.ClientConnectionBurst,
		RoleBindingsResyncPeriod:   10 * time.Hour,
	}
	if o.CapsuleConfigurationName == "" {
		o.CapsuleConfigurationName = "default"
	}
	if c.RequireCapsuleUser != nil {
		o.RequireCapsuleUser = *c.RequireCapsuleUser
	}
	for k, v := range c.FeatureGates {
		o.FeatureGates[k] = v
	}
	if len(o.AllowedPaths) == 0 {
		o.AllowedPaths = []string{"/api", "/apis", "/version"}
	}
	if o.ClientQPS <= 0 {
		o.ClientQPS = 20
	}
	if o.ClientBurst <= 0 {
		o.ClientBurst = 30
	}
	if d, err := time.ParseDuration(c.RolebindingsResyncPeriod); err == nil && d > 0 {
		o.RoleBindingsResyncPeriod = d
	}
	return o
}
