package plugins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// DirPrefix is the file-name prefix --provider-dir looks for; anything else
// in the directory (READMEs, config files) is ignored.
const DirPrefix = "wharf-provider-"

// checksumSep separates a --provider path from its pinned checksum. Only
// this exact form is stripped, so paths that contain '@' still work.
const checksumSep = "@sha256:"

// Options are the hub's --provider* flags.
type Options struct {
	// Providers are raw --provider values: name=path[@sha256:<hex>].
	Providers []string
	// Dir is --provider-dir: every executable wharf-provider-* in it is
	// loaded under the name its manifest declares.
	Dir string
	// Configs are raw --provider-config values: name=file.yaml.
	Configs []string

	Supervision Supervision
}

// NewOptions returns options with the defaults documented in the flags.
func NewOptions() *Options {
	return &Options{Supervision: DefaultSupervision()}
}

// AddFlags binds the options to fs. StringArray, not StringSlice: paths may
// contain commas.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Providers, "provider", o.Providers, "Provider plugin to run, as name=path[@sha256:<hex>]. The name must match the plugin's manifest; the checksum, when given, pins the binary. Repeatable.")
	fs.StringVar(&o.Dir, "provider-dir", o.Dir, "Directory whose executables named "+DirPrefix+"* are all run as providers, each under its manifest name.")
	fs.StringArrayVar(&o.Configs, "provider-config", o.Configs, "Configuration file handed to a provider at start, as name=file.yaml. Repeatable.")
	fs.DurationVar(&o.Supervision.HealthInterval, "provider-health-interval", o.Supervision.HealthInterval, "How often each provider plugin is health-pinged.")
	fs.DurationVar(&o.Supervision.StartTimeout, "provider-start-timeout", o.Supervision.StartTimeout, "Bound on launching, describing and starting a provider plugin.")
}

// Validate reports every invalid option at once. Names of --provider-dir
// plugins are only known once they run, so a --provider-config for an
// unknown name is an error only without --provider-dir.
func (o *Options) Validate() []error {
	var errs []error
	specs, err := o.Specs()
	if err != nil {
		errs = append(errs, err)
	}
	configs, err := o.ProviderConfigs()
	if err != nil {
		errs = append(errs, err)
	}
	if o.Dir == "" {
		known := map[string]bool{}
		for _, s := range specs {
			known[s.Name] = true
		}
		for _, name := range sortedKeys(configs) {
			if !known[name] {
				errs = append(errs, fmt.Errorf("--provider-config %s: no --provider of that name", name))
			}
		}
	}
	errs = append(errs, o.Supervision.Validate()...)
	return errs
}

// Specs parses --provider and lists --provider-dir. Dir entries have an
// empty Name until the Host asks the binary for its manifest.
func (o *Options) Specs() ([]Spec, error) {
	var specs []Spec
	var errs []error
	seen := map[string]bool{}
	for _, raw := range o.Providers {
		s, err := ParseProvider(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("--provider %s: name given twice", s.Name))
			continue
		}
		seen[s.Name] = true
		specs = append(specs, s)
	}
	if o.Dir != "" {
		dirSpecs, err := scanDir(o.Dir)
		if err != nil {
			errs = append(errs, err)
		}
		specs = append(specs, dirSpecs...)
	}
	return specs, errors.Join(errs...)
}

// ParseProvider parses one --provider value, name=path[@sha256:<hex>].
func ParseProvider(raw string) (Spec, error) {
	name, path, ok := strings.Cut(raw, "=")
	if !ok || name == "" || path == "" {
		return Spec{}, fmt.Errorf("--provider %q: want name=path[@sha256:<hex>]", raw)
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return Spec{}, fmt.Errorf("--provider %q: name: %s", raw, strings.Join(msgs, "; "))
	}
	s := Spec{Name: name, Path: path}
	if i := strings.LastIndex(path, checksumSep); i >= 0 {
		sum, err := plugin.ParseChecksum(path[i+1:])
		if err != nil {
			return Spec{}, fmt.Errorf("--provider %q: %w", raw, err)
		}
		s.Path, s.Checksum = path[:i], sum
	}
	if s.Path == "" {
		return Spec{}, fmt.Errorf("--provider %q: empty path", raw)
	}
	if err := checkExecutable(s.Path); err != nil {
		return Spec{}, fmt.Errorf("--provider %s: %w", name, err)
	}
	return s, nil
}

// ProviderConfigs reads every --provider-config file. Reading at startup,
// not at each plugin restart, keeps a restarted plugin on the config the
// hub was started with.
func (o *Options) ProviderConfigs() (map[string][]byte, error) {
	out := map[string][]byte{}
	var errs []error
	for _, raw := range o.Configs {
		name, file, ok := strings.Cut(raw, "=")
		if !ok || name == "" || file == "" {
			errs = append(errs, fmt.Errorf("--provider-config %q: want name=file.yaml", raw))
			continue
		}
		if _, dup := out[name]; dup {
			errs = append(errs, fmt.Errorf("--provider-config %s: given twice", name))
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("--provider-config %s: %w", name, err))
			continue
		}
		out[name] = b
	}
	return out, errors.Join(errs...)
}

// scanDir lists the provider binaries in dir, sorted for a stable start
// order.
func scanDir(dir string) ([]Spec, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--provider-dir: %w", err)
	}
	var specs []Spec
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), DirPrefix) || e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if checkExecutable(p) != nil {
			continue // e.g. wharf-provider-foo.yaml next to the binary
		}
		specs = append(specs, Spec{Path: p, FromDir: true})
	}
	return specs, nil
}

// checkExecutable fails early and by name on a path go-plugin would only
// report as a failed exec.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", path)
	}
	return nil
}

// Supervision holds the timings of launch, health checking and restarts.
type Supervision struct {
	// HealthInterval is the time between health pings.
	HealthInterval time.Duration
	// HealthTimeout bounds one health ping.
	HealthTimeout time.Duration
	// HealthFailures is how many consecutive failed pings mean "restart".
	// More than one, so a single slow answer on a loaded machine does not
	// cost a restart; a dead process is noticed without pings anyway.
	HealthFailures int
	// StartTimeout bounds launch, Describe and Start together.
	StartTimeout time.Duration
	// StopTimeout bounds the polite Stop at shutdown before the kill.
	StopTimeout time.Duration
	// BackoffInitial and BackoffMax bound the full-jitter restart delay.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// StableAfter is how long a plugin must run for the backoff to reset.
	StableAfter time.Duration
	// ExitPoll is how often the process is checked for having exited, so a
	// crash is noticed well before the next health ping.
	ExitPoll time.Duration
}

// DefaultSupervision returns the production timings.
func DefaultSupervision() Supervision {
	return Supervision{
		HealthInterval: 10 * time.Second,
		HealthTimeout:  5 * time.Second,
		HealthFailures: 3,
		StartTimeout:   plugin.DefaultStartTimeout,
		StopTimeout:    10 * time.Second,
		BackoffInitial: time.Second,
		BackoffMax:     30 * time.Second,
		StableAfter:    time.Minute,
		ExitPoll:       250 * time.Millisecond,
	}
}

// Validate reports every non-positive timing.
func (s Supervision) Validate() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--provider-health-interval", s.HealthInterval},
		{"health timeout", s.HealthTimeout},
		{"--provider-start-timeout", s.StartTimeout},
		{"stop timeout", s.StopTimeout},
		{"initial backoff", s.BackoffInitial},
		{"maximum backoff", s.BackoffMax},
		{"stable period", s.StableAfter},
		{"exit poll", s.ExitPoll},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", d.name, d.v))
		}
	}
	if s.HealthFailures < 1 {
		errs = append(errs, fmt.Errorf("health failures must be at least 1, got %d", s.HealthFailures))
	}
	if s.BackoffMax < s.BackoffInitial {
		errs = append(errs, fmt.Errorf("maximum backoff %s below initial %s", s.BackoffMax, s.BackoffInitial))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
