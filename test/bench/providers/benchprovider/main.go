// Command benchprovider serves the benchmark's upstream handler either as
// a Wharf provider plugin named "bench" (no arguments: the hub runs it) or,
// with -socket <path>, as a plain HTTP server on a unix socket, so nginx and
// the direct target reach the very same handler in the same kind of
// process. With -proxy <addr> it is instead a bare Go reverse proxy to that
// socket (see upstream.ServeGoProxy).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/test/bench/providers/upstream"
)

type provider struct{}

func (provider) Manifest() sdk.Manifest {
	return sdk.Manifest{Name: "bench", DisplayName: "Bench", Version: "v0.0.1", Backend: upstream.Handler()}
}

func main() {
	socket := flag.String("socket", "", "serve the handler on this unix socket instead of running as a plugin")
	proxy := flag.String("proxy", "", "with -socket: reverse-proxy this TLS address to the socket instead")
	cert := flag.String("cert", "", "with -proxy: serving certificate")
	key := flag.String("key", "", "with -proxy: serving key")
	flag.Parse()
	var err error
	switch {
	case *socket == "":
		sdk.Serve(provider{})
		return
	case *proxy != "":
		err = upstream.ServeGoProxy(*proxy, *cert, *key, *socket)
	default:
		err = upstream.ServeUnix(*socket)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchprovider:", err)
		os.Exit(1)
	}
}
