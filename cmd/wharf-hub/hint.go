package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/wharfhub/wharf/hub/plugins"
	"github.com/wharfhub/wharf/hub/server"
)

// sampleProvider is the SDK's sample (sdk/examples/hello), which `make run`
// loads; its /whoami shows a newcomer the identity contract end to end.
const sampleProvider = "hello"

// printProviderHint tells how to call the sample provider's backend when it
// is configured. The token is read from its file by the shell, never
// printed: terminal scrollback and CI logs are not secret.
func printProviderHint(w io.Writer, o *server.Options, externalURL string) {
	specs, _ := o.Plugins.Specs() // already validated
	for _, s := range specs {
		name := s.Name
		if s.FromDir {
			// Directory plugins are named by their manifest once started;
			// the file name is the usual guess.
			name = strings.TrimPrefix(filepath.Base(s.Path), plugins.DirPrefix)
		}
		if name != sampleProvider {
			continue
		}
		// The admin has no home workspace, so the hint names root.
		fmt.Fprintf(w, "      curl --cacert %s -H \"Authorization: Bearer $(cat %s)\" -H \"X-Wharf-Workspace: root\" %s/services/providers/%s/whoami\n",
			o.SecureServing.ServerCert.CertKey.CertFile, filepath.Join(o.DataDir, "admin-token"), externalURL, name)
		return
	}
}

// printPortalHint names the portal's URL and how to sign in to it. With
// token login on, that is the admin token's file: the token itself is
// never printed.
func printPortalHint(w io.Writer, o *server.Options, externalURL string) {
	fmt.Fprintf(w, "Portal: %s/\n", strings.TrimSuffix(externalURL, "/"))
	switch {
	case o.Login.TokenLoginEnabled(o.Authn.OIDC.Enabled()):
		fmt.Fprintf(w, "      sign in with the token in %s (paste it into the portal's token form)\n", filepath.Join(o.DataDir, "admin-token"))
	case o.Authn.OIDC.Enabled():
		fmt.Fprintf(w, "      sign in with %s\n", o.Authn.OIDC.IssuerURL)
	}
	fmt.Fprintf(w, "      trust %s in the browser, or accept its warning once\n", o.SecureServing.ServerCert.CertKey.CertFile)
}
