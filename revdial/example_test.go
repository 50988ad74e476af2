package revdial_test

import (
	"context"
	"log"
	"net"
	"net/http"

	"github.com/wharfhub/wharf/revdial"
)

// The server side: agents open their control channel at /agent/{id}, and
// their pickups arrive under /pickup/. Anything in the process can then
// reach an agent with Dialer.Dial.
func ExampleServer() {
	srv := revdial.NewServer("/pickup", revdial.Options{WarmPickups: 2})
	mux := http.NewServeMux()
	mux.HandleFunc("/agent/{id}", func(w http.ResponseWriter, r *http.Request) {
		// Authenticate the agent before adopting its tunnel.
		if _, err := srv.Upgrade(w, r, r.PathValue("id")); err != nil {
			log.Print(err)
		}
	})
	mux.Handle("/pickup/", srv) // public: tokens authorize pickups

	// Elsewhere, for example in a reverse proxy's transport:
	dial := func(ctx context.Context, id string) (net.Conn, error) {
		d, ok := srv.Dialer(id)
		if !ok {
			return nil, net.ErrClosed
		}
		return d.Dial(ctx)
	}
	_ = dial
	_ = http.ListenAndServeTLS(":8443", "hub.crt", "hub.key", mux)
}

// The agent side: keep a control channel open with rotating credentials
// and serve HTTP on every connection the server dials.
func ExampleClient() {
	cl, err := revdial.NewClient(revdial.ClientConfig{
		URL: "wss://hub.example/agent/edge-1",
		Header: func(ctx context.Context) (http.Header, error) {
			return http.Header{"Authorization": {"Bearer " + currentToken()}}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	go func() { _ = cl.Run(ctx) }()
	_ = http.Serve(cl, http.NotFoundHandler()) // cl is a net.Listener
}

func currentToken() string { return "token" }
