// Package proxybody releases a reverse proxy's inbound HTTP/2 request body
// when the upstream's answer has been relayed, so that an early answer
// cannot deadlock the request.
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
// status above 299 and waits for the end of the answer, which over HTTP/2
// needs the handler to return: both wait until the client gives up.
//
// [Handler] notes each HTTP/2 request's body and [Transport] closes it
// when the upstream response body is closed. An HTTP/2 request body's
// Close never blocks and only breaks the read; it is what the server does
// anyway once the handler returns, only before ReverseProxy waits on it.
//
// HTTP/1 request bodies are left alone: their Close waits for a read in
// progress, and no HTTP/1 hop needs it. Go's HTTP/1 client does not stop
// sending on an early answer, and Go's HTTP/1 server reads (up to 256 KiB
// of) an unread body before it writes an answer, so a chain of HTTP/1
// hops behind kubectl delivers the whole body before any refusal reaches
// kubectl.
//
// # Threat model
//
// Without this package, a client holding back its body after a refusal
// (kubectl does so by design) held the proxy's handler and its upstream
// stream after the answer, past any limit that counts handlers, until the
// client left. Closing the body early gives the upstream nothing it would
// not have had: the transport stops sending, as it does when the handler
// returns.
package proxybody
