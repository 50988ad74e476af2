// Command wharf-provider-resource-proxy is the resource-proxy provider
// plugin: the hub loads it from --provider-dir and routes the workspaces'
// APIServices that name it here (package providers/resourceproxy).
package main

import (
	"github.com/wharfhub/wharf/providers/resourceproxy"
	"github.com/wharfhub/wharf/sdk"
)

func main() { sdk.Serve(resourceproxy.New()) }
