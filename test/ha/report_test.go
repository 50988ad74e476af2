package ha

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// figures collects every case's rows for the table TestMain prints at
// the end of the run.
var figures struct {
	mu   sync.Mutex
	rows [][3]string // case, figure, value
}

func record(t *testing.T, figure string, value any) {
	t.Helper()
	v := fmt.Sprint(value)
	t.Logf("%-40s %s", figure, v)
	figures.mu.Lock()
	figures.rows = append(figures.rows, [3]string{t.Name(), figure, v})
	figures.mu.Unlock()
}

func printFigures() {
	figures.mu.Lock()
	defer figures.mu.Unlock()
	if len(figures.rows) == 0 {
		return
	}
	w := [3]int{4, 6, 5}
	for _, r := range figures.rows {
		for i := range 3 {
			w[i] = max(w[i], len(r[i]))
		}
	}
	line := func(a, b, c string) {
		fmt.Fprintf(os.Stdout, "| %-*s | %-*s | %-*s |\n", w[0], a, w[1], b, w[2], c)
	}
	fmt.Println("\nHA figures")
	line("case", "figure", "value")
	fmt.Printf("|%s|%s|%s|\n", strings.Repeat("-", w[0]+2), strings.Repeat("-", w[1]+2), strings.Repeat("-", w[2]+2))
	for _, r := range figures.rows {
		line(r[0], r[1], r[2])
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	printFigures()
	// The binaries built for this run (hub_test.go) are about 160 MB.
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// recordLoad records a load's acknowledged writes, errors by cause and
// the verification against the store.
func recordLoad(t *testing.T, ld *load, v verifyResult) {
	t.Helper()
	record(t, "writes acknowledged (certain)", v.acked)
	record(t, "acknowledged writes found", v.found)
	record(t, "writes uncertain (request failed)", v.uncertain)
	if v.missing+v.wrongRV+v.resurrected > 0 {
		record(t, "LOST: missing / wrong rv / resurrected", fmt.Sprintf("%d / %d / %d", v.missing, v.wrongRV, v.resurrected))
	}
	rows := ld.l.errorRows()
	record(t, "client errors", ld.l.errorCount())
	for _, r := range rows {
		record(t, "  error: "+r[0], r[1])
	}
	resumes := 0
	for _, w := range ld.watchers {
		w.mu.Lock()
		resumes += w.resumes
		w.mu.Unlock()
	}
	if len(ld.watchers) > 0 {
		record(t, "watch resumptions from last resourceVersion", resumes)
	}
}
