package plugins

import (
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/klog/v2"
)

// debugV is the klog verbosity for a plugin's trace and debug lines, so
// go-plugin's per-start chatter ("plugin address") stays out of default
// logs.
const debugV = 4

// logWriter turns each plugin output line into one structured log entry.
// plugin.Launch guarantees one complete line per Write, never concurrent,
// so no buffering is needed here.
type logWriter struct{ log klog.Logger }

func newLogWriter(log klog.Logger) *logWriter { return &logWriter{log: log} }

func (w *logWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\r\n")
	e, ok := parseHCLog(line)
	if !ok {
		w.log.Info("Provider output", "line", line)
		return len(p), nil
	}
	switch e.level {
	case "trace", "debug":
		w.log.V(debugV).Info(e.msg, e.kv...)
	case "error":
		w.log.Error(nil, e.msg, e.kv...)
	default:
		w.log.Info(e.msg, e.kv...)
	}
	return len(p), nil
}

// hcEntry is one hclog JSON line, which is what the SDK side of go-plugin
// writes; re-logging its fields keeps them queryable instead of burying
// them in an escaped "line" string.
type hcEntry struct {
	level string
	msg   string
	kv    []any
}

func parseHCLog(line string) (hcEntry, bool) {
	if !strings.HasPrefix(line, "{") {
		return hcEntry{}, false
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return hcEntry{}, false
	}
	msg, ok := m["@message"].(string)
	if !ok {
		return hcEntry{}, false
	}
	level, _ := m["@level"].(string)
	e := hcEntry{level: strings.ToLower(level), msg: msg}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "@message", "@level", "@timestamp":
			// Carried by the entry itself; klog stamps its own time.
		case "provider":
			// The hub sets this key; a plugin must not be able to log as
			// another provider.
		default:
			e.kv = append(e.kv, strings.TrimPrefix(k, "@"), m[k])
		}
	}
	return e, true
}
