// Package portal holds the browser tests of the portal: Debian's chromium,
// headless, driven from Go with chromedp, against the real hub (started
// through test/testutil), the zitadel op test IdP (test/idp) and real
// provider processes: the hello sample and the hostile probe of
// test/e2e/portalprobe.
//
// Chromium runs with a fresh user-data-dir and trusts exactly the hub's
// and the IdP's serving certificates, pinned by SPKI hash
// (--ignore-certificate-errors-spki-list), never every certificate.
//
// # Screenshots
//
// Each test saves PNGs of the pages it visits: in $WHARF_TEST_ARTIFACTS
// when set, else in the test's t.ArtifactDir(), which `go test` keeps
// only with -artifacts (under -outputdir, default the package directory):
//
//	go test -count=1 -run TestPortal -artifacts -outputdir /tmp/portal ./test/e2e/portal/
//	WHARF_TEST_ARTIFACTS=/tmp/shots go test -count=1 -run TestPortal ./test/e2e/portal/
//
// The files are numbered in the order of the scenario (01-signin.png,
// 02-overview.png, ...); the test log names each one.
package portal
