// Package ws holds the end-to-end tests of `wharf ws` against a real hub:
// the wharf-hub and wharf binaries that `make build` made, started through
// test/testutil, and the fixture's real kubectl to check that each
// rewritten kubeconfig really reaches the workspace it names.
package ws
