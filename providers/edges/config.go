package edges

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of the provider config. The liveness values follow the spec: a
// silent tunnel dies at revdial's 60 s read deadline, so an edge is
// Disconnected well within 90 s.
const (
	DefaultJoinTokenTTL       = time.Hour
	DefaultCredentialRotation = 24 * time.Hour
	DefaultHeartbeatInterval  = 5 * time.Minute
	DefaultStartupGrace       = 90 * time.Second
)

// Config is the operator's provider config (YAML, via HubConfig.DecodeConfig):
//
//	joinTokenTTL: 1h
//	credentialRotation: 24h
//	heartbeatInterval: 5m
//	startupGrace: 90s
//	keepAliveInterval: 18s   # revdial
//	readDeadline: 60s        # revdial
//
// Zero values mean the defaults; tests shorten them.
type Config struct {
	JoinTokenTTL       metav1.Duration `json:"joinTokenTTL,omitempty"`
	CredentialRotation metav1.Duration `json:"credentialRotation,omitempty"`
	// HeartbeatInterval is how often a connected edge's
	// status.lastHeartbeatTime is rewritten; between transitions that is
	// the only status write liveness costs.
	HeartbeatInterval metav1.Duration `json:"heartbeatInterval,omitempty"`
	// StartupGrace is how long after a (re)start an edge whose status says
	// Ready may stay so without a tunnel, so that a failover does not flap
	// every edge to Disconnected while its agent reconnects.
	StartupGrace      metav1.Duration `json:"startupGrace,omitempty"`
	KeepAliveInterval metav1.Duration `json:"keepAliveInterval,omitempty"`
	ReadDeadline      metav1.Duration `json:"readDeadline,omitempty"`
}

func (c Config) withDefaults() Config {
	def := func(d *metav1.Duration, v time.Duration) {
		if d.Duration <= 0 {
			d.Duration = v
		}
	}
	def(&c.JoinTokenTTL, DefaultJoinTokenTTL)
	def(&c.CredentialRotation, DefaultCredentialRotation)
	def(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&c.StartupGrace, DefaultStartupGrace)
	// KeepAliveInterval and ReadDeadline stay zero: revdial fills them.
	return c
}

func (c Config) validate() error {
	for _, d := range []metav1.Duration{c.JoinTokenTTL, c.CredentialRotation, c.HeartbeatInterval, c.StartupGrace, c.KeepAliveInterval, c.ReadDeadline} {
		if d.Duration < 0 {
			return errors.New("edges config: durations must not be negative")
		}
	}
	if c.KeepAliveInterval.Duration > 0 && c.ReadDeadline.Duration > 0 && c.KeepAliveInterval.Duration >= c.ReadDeadline.Duration {
		return errors.New("edges config: keepAliveInterval must be shorter than readDeadline")
	}
	return nil
}
