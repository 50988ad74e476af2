// Package hub holds end-to-end tests of wharf-hub: they start the real
// binary (from $WHARF_BIN_DIR, which `make test` sets, or built on demand)
// and drive it with the real kubectl.
package hub
