package proxy

import "sync"

// copyBufferSize is what ReverseProxy would allocate per request.
const copyBufferSize = 32 << 10

// bufferPool recycles ReverseProxy's copy buffers. Without it every
// proxied request allocates 32 KiB, which was three quarters of the hub's
// allocation volume under load (test/bench/providers) and so most of its
// garbage collection work.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}}}
}

// Get implements httputil.BufferPool.
func (bp *bufferPool) Get() []byte { return *bp.p.Get().(*[]byte) }

// Put implements httputil.BufferPool. Only full-size buffers go back, so a
// caller can never shrink the pool's buffers.
func (bp *bufferPool) Put(b []byte) {
	if cap(b) < copyBufferSize {
		return
	}
	b = b[:copyBufferSize]
	bp.p.Put(&b)
}
