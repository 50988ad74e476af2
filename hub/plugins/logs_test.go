package plugins

import (
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

func TestLogWriter(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    []string
		notWant []string
	}{
		{name: "plain", line: "panic: boom\n", want: []string{"INFO Provider output", `line="panic: boom"`, `provider="x"`}},
		{name: "hclog info", line: `{"@level":"info","@message":"listening","@timestamp":"t","port":8080}` + "\n",
			want: []string{"INFO listening", `port=8080`, `provider="x"`}, notWant: []string{"@timestamp", "Provider output", "@level"}},
		{name: "hclog error", line: `{"@level":"error","@message":"failed","@module":"m"}` + "\n",
			want: []string{"ERROR", "failed", `module="m"`}},
		{name: "hclog debug hidden by default", line: `{"@level":"debug","@message":"plugin address"}` + "\n",
			notWant: []string{"plugin address"}},
		{name: "cannot spoof provider", line: `{"@level":"info","@message":"hi","provider":"other"}` + "\n",
			want: []string{`provider="x"`}, notWant: []string{`provider="other"`}},
		{name: "json without message", line: `{"a":1}` + "\n", want: []string{"INFO Provider output"}},
		{name: "broken json", line: `{"@message": ` + "\n", want: []string{"INFO Provider output"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
			buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
			w := newLogWriter(logger.WithValues("provider", "x"))
			if n, err := w.Write([]byte(tt.line)); n != len(tt.line) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			got := buf.String()
			for _, s := range tt.want {
				if !strings.Contains(got, s) {
					t.Errorf("log %q lacks %q", got, s)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(got, s) {
					t.Errorf("log %q contains %q", got, s)
				}
			}
		})
	}
}
