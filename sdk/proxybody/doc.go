// Package proxybody releases a reverse proxy's inbound request body when
// the upstream's answer has been relayed, so that an early answer cannot
// deadlock the request.
//
// An upstream reached over HTTP/2 (kube-apiserver, for a proxy that uses
// client-go's transport) may answer before it has read the request body:
// a forbidden DELETE, PATCH or PUT is refused on its headers. Go's HTTP/2
// client transport goes on reading the body to send it, in a goroutine,
// and closing the upstream response waits for that goroutine.
// httputil.ReverseProxy closes the upstream response before its handler
// returns, and hands the transport a body whose Close does nothing, so
// nothing ends that read but the rest of the body. When the client is
// Go's HTTP/2 client (kubectl), it stops sending its body on a final
// status above 299 and waits for the end of the answer, which needs the
// handler to return: both wait until the client gives up.
//
// When the client side is HTTP/1 (a hop of a chain that started with
// kubectl over HTTP/2), it is worse: Go's HTTP/1 server cannot write the
// answer's header while the transport's read of the body is in progress,
// whatever the upstream.
//
// [Handler] remembers each request's body and [Transport] releases it when
// the upstream response body is closed, and an HTTP/1 body as soon as the
// upstream answers with a status above 299: an HTTP/2 request body is
// closed (its Close never blocks and only breaks the read), an HTTP/1 body
// that has not been read to its end gets a read deadline in the past on
// its connection (its Close would wait for the read in progress). Either is
// what would happen anyway once the handler returns; it only happens
// before ReverseProxy waits on it. Releasing an HTTP/1 body that was not
// read to its end costs the client its keep-alive connection, which the
// server would close anyway for an unread body.
//
// # Threat model
//
// A client that withholds its body on purpose holds one request, its
// own, as it could without this package; the server's timeouts and the
// hub's per-tenant limits bound that. Without this package, the proxy's
// handler and its upstream stream stayed held after the answer, past any
// limit that counts handlers, until the client left.
package proxybody
