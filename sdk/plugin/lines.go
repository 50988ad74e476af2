package plugin

import (
	"bytes"
	"io"
	"sync"
)

// maxLine bounds a buffered partial line; longer lines are cut so a plugin
// writing without newlines cannot grow the hub's memory.
const maxLine = 64 << 10

// lineWriter turns a byte stream into whole lines. go-plugin hands over the
// plugin's output in arbitrary pieces from two goroutines (the process's
// stderr, and os.Stdout/os.Stderr relayed over gRPC after Serve), and writes
// a line's newline separately; a hub logging each Write would log
// fragments. Each stream gets its own lineWriter, and all of them share one
// mutex on out, so out sees exactly one complete line per Write, never
// interleaved.
type lineWriter struct {
	outMu *sync.Mutex
	out   io.Writer

	mu  sync.Mutex
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
	for len(l.buf) >= maxLine {
		l.emit(append(l.buf[:maxLine:maxLine], '\n'))
		l.buf = l.buf[maxLine:]
	}
	if len(l.buf) == 0 {
		l.buf = nil // let a big spent buffer go
	}
	return len(p), nil
}

// Flush emits a trailing partial line, e.g. a crash message without "\n".
func (l *lineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

func (l *lineWriter) emit(line []byte) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	// A logging sink's error must not kill the plugin's output relay.
	_, _ = l.out.Write(line)
}
