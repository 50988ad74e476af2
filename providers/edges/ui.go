package edges

import (
	"embed"
	"io/fs"
)

// The portal page <wharf-provider-edges> (ui/main.js): the workspace's
// edges, live, with the join, SSH and kubeconfig commands for each. It
// uses only what the portal hands it (sdk/ui.go): api.fetch for the Edge
// API and the join-token route of this backend.
//
//go:embed ui
var uiFS embed.FS

func uiFiles() fs.FS {
	sub, err := fs.Sub(uiFS, "ui")
	if err != nil {
		panic(err) // embedded at build time
	}
	return sub
}
