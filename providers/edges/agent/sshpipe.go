package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// closeWriter is a connection that can end its write side alone.
type closeWriter interface{ CloseWrite() error }

// serveSSH pipes every connection accepted from ln to a fresh TCP dial of
// sshAddr until ln fails; it returns when every pipe has ended.
func serveSSH(ctx context.Context, ln net.Listener, sshAddr string) error {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			s, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(dctx, "tcp", sshAddr)
			cancel()
			if err != nil {
				logger.Error(err, "Cannot reach the edge's sshd", "addr", sshAddr)
				return
			}
			defer s.Close()
			pipe(ctx, c, s)
		}()
	}
}

// pipe copies both ways until both directions end or ctx is done. It is
// half-close aware: when one side finishes sending, the other side's write
// half is closed (if it can be closed alone), so the peer still sends its
// remaining output, as ssh needs for `ssh host cmd < file`.
func pipe(ctx context.Context, a, b net.Conn) {
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(closeWriter); ok {
			_ = cw.CloseWrite()
		} else {
			// No half close on this side (a tunnel connection): end it,
			// which also ends the other direction.
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go half(a, b)
	go half(b, a)
	for n := 0; n < 2; n++ {
		select {
		case <-done:
		case <-ctx.Done():
			a.Close()
			b.Close()
			for ; n < 2; n++ {
				<-done
			}
			return
		}
	}
}
