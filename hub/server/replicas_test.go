package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Shutdown order: the plugins stop first, and the API server keeps serving
// until the plugin host has returned (a Lease release goes through it).
func TestStopPluginsFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pluginsCtx, serverCtx, pluginsDone, wait := stopPluginsFirst(ctx)
	cancel()
	select {
	case <-pluginsCtx.Done():
	case <-time.After(time.Minute):
		t.Fatal("plugins not told to stop")
	}
	if serverCtx.Err() != nil {
		t.Fatal("server stopped before the plugin host returned")
	}
	pluginsDone <- nil
	select {
	case <-serverCtx.Done():
	case <-time.After(time.Minute):
		t.Fatal("server not stopped after the plugin host returned")
	}
	wait()
}

// A server that ends on its own (listen error) still stops the plugins,
// and wait returns only once they have.
func TestStopPluginsFirstServerEnds(t *testing.T) {
	pluginsCtx, _, pluginsDone, wait := stopPluginsFirst(context.Background())
	waited := make(chan struct{})
	go func() { wait(); close(waited) }()
	select {
	case <-pluginsCtx.Done():
	case <-time.After(time.Minute):
		t.Fatal("plugins not told to stop")
	}
	select {
	case <-waited:
		t.Fatal("wait returned before the plugin host did")
	default:
	}
	pluginsDone <- errors.New("plugin host error is logged, not fatal")
	<-waited
}
