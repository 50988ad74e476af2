package rapidreset

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// Filter charges each HTTP/2 stream its client cancelled before the hub
// began its answer to the stream's connection, and serves nothing for a
// stream already cancelled when it arrives. It must be the outermost
// filter: before authentication and every other limit, so that a stream
// costs the same with a token, an invalid one or none.
func (b *Budgets) Filter(next http.Handler) http.Handler {
	if !b.enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// HTTP/1.1 cancels by closing its connection; an upgraded one
		// must never be closed from here.
		if r.ProtoMajor != 2 {
			next.ServeHTTP(w, r)
			return
		}
		c := b.connOf(r.RemoteAddr)
		if c == nil || b.exempted(c) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		if ctx.Err() != nil {
			// Reset before its handler started: nobody waits for an
			// answer, and none of the chain runs for it.
			b.reset(c)
			return
		}
		a := &answer{ResponseWriter: w, ctx: ctx}
		if c.slots != nil {
			// Past the connection's unanswered streams, wait here,
			// where a reset ends the wait at once, not in the chain
			// (a lock of the flow control, the CPU), where it is
			// noticed only when the stream's turn comes.
			select {
			case c.slots <- struct{}{}:
			default:
				select {
				case c.slots <- struct{}{}:
				case <-ctx.Done():
					b.reset(c)
					return
				}
			}
			a.release = func() { <-c.slots }
			defer a.begin()
		}
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(a), r)
		if ctx.Err() != nil && !a.inTime.Load() {
			b.reset(c)
		}
	})
}

// answer records whether the hub began its answer (wrote the header)
// while the stream was still open. An answer begun only after the
// cancel is a handler noticing it (an error it writes for the canceled
// context), not one the client waited for.
type answer struct {
	http.ResponseWriter
	ctx    context.Context
	begun  atomic.Bool
	inTime atomic.Bool
	// release gives the connection's slot back once the answer begins
	// (or the handler returns); nil: none taken.
	release func()
}

var _ responsewriter.UserProvidedDecorator = &answer{}

func (a *answer) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *answer) WriteHeader(code int) {
	a.begin()
	a.ResponseWriter.WriteHeader(code)
}

func (a *answer) Write(p []byte) (int, error) {
	a.begin()
	return a.ResponseWriter.Write(p)
}

func (a *answer) begin() {
	if a.begun.CompareAndSwap(false, true) {
		a.inTime.Store(a.ctx.Err() == nil)
		if a.release != nil {
			a.release()
		}
	}
}

// SkipCancelled serves nothing for a request whose client cancelled it
// already. It sits just outside the apiserver's chain, whose timeout
// filter would otherwise run the request in a goroutine of its own,
// answer the cancel with a 504 nobody reads and leave that goroutine to
// go on through authentication and flow control, logging "Post-timeout
// activity" when it ends: in a rapid reset that is most of what a reset
// stream still costs after Filter (fifth review, #20).
//
// Only an HTTP/2 stream its client reset (or whose connection is gone) is
// skipped: an HTTP/1.1 request, the hub's in-process client's among them,
// and one past its deadline get the chain's own answer.
func SkipCancelled(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && errors.Is(r.Context().Err(), context.Canceled) {
			return
		}
		next.ServeHTTP(w, r)
	})
}
