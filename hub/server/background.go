package server

import (
	"context"
	"fmt"
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
)

// background is a long-running part of the hub: an index or a controller.
type background struct {
	name string
	// run blocks until ctx is done.
	run func(ctx context.Context)
	// synced, when set, gates readiness: /readyz fails until it is true, so
	// no request is served from a half-loaded index.
	synced func() bool
}

// startBackground starts each component once the server is up (post-start
// hooks run after the listener opens, so loopback clients work) and adds
// its readiness check.
func startBackground(s *genericapiserver.GenericAPIServer, bg []background) error {
	var checks []healthz.HealthChecker
	for _, b := range bg {
		b := b
		if err := s.AddPostStartHook(b.name, func(hc genericapiserver.PostStartHookContext) error {
			go b.run(hc)
			return nil
		}); err != nil {
			return fmt.Errorf("registering %s: %w", b.name, err)
		}
		if b.synced != nil {
			checks = append(checks, healthz.NamedCheck(b.name, func(*http.Request) error {
				if !b.synced() {
					return fmt.Errorf("%s not synced", b.name)
				}
				return nil
			}))
		}
	}
	return s.AddReadyzChecks(checks...)
}
