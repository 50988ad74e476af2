package plugins

import (
	"strings"

	"k8s.io/klog/v2"
)

// logWriter turns each plugin output line into one structured log entry.
// plugin.Launch guarantees one complete line per Write, never concurrent,
// so no buffering is needed here.
type logWriter struct{ log klog.Logger }

func newLogWriter(log klog.Logger) *logWriter { return &logWriter{log: log} }

func (w *logWriter) Write(p []byte) (int, error) {
	w.log.Info("Provider output", "line", strings.TrimRight(string(p), "\r\n"))
	return len(p), nil
}
