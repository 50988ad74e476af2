package core

import (
	"io"
	"net/http"
)

// The client's request body must be released when the downstream's answer
// has been relayed, or an early answer deadlocks the stream.
//
// An HTTP/2 client (Go's, so kubectl's) that receives a final status above
// 299 while it is still sending the request body stops sending it, without
// END_STREAM, and waits for the end of the response. kube-apiserver answers
// a forbidden DELETE, PATCH or PUT without reading the body, so under load
// the 403 can reach the client through us before the client has finished
// its body. Our downstream transport, meanwhile, is still reading that body
// in its own goroutine (to send it on), and closing the downstream
// response waits for that goroutine. ReverseProxy closes the downstream
// response before the handler returns, so the handler never returns, the
// client never sees the end of the response and never sends the rest of
// its body: both sides wait until the client gives up. (ReverseProxy hands
// the transport a body whose Close does nothing, so the transport cannot
// break the wait itself.) `kubectl delete node X --dry-run=server` without
// a delete grant hung for two minutes this way.
//
// Closing the client's body when the downstream response is closed ends
// the transport's read at once. That is what would happen anyway when the
// handler returns; it only happens before ReverseProxy waits on it. Only
// HTTP/2 request bodies are closed here: their Close never blocks, while
// an HTTP/1 body's Close waits for a Read in progress and drains what is
// left, and an HTTP/1 client does not stop mid-body on an early answer.

// releasedBody returns the body to close with the downstream response: the
// request's own body when it is an HTTP/2 body still to be sent, else nil.
func releasedBody(r *http.Request) io.Closer {
	if r.ProtoMajor != 2 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	return r.Body
}

// releasingBody is a downstream response body whose Close first closes the
// client's request body (see above).
type releasingBody struct {
	io.ReadCloser
	in io.Closer
}

func (b *releasingBody) Close() error {
	_ = b.in.Close() // an HTTP/2 request body's Close only breaks its pipe
	return b.ReadCloser.Close()
}

// releaseOnClose wraps resp's body when the request that produced it
// carries a client body to release.
func releaseOnClose(r *http.Request, resp *http.Response) {
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil || st.inBody == nil || resp.Body == nil {
		return
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, in: st.inBody}
}
