package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// objKey names one ConfigMap: workspace and name (namespace default).
type objKey struct{ ws, name string }

// objState is what the server acknowledged last about an object.
type objState struct {
	rv        string
	deleted   bool
	uncertain bool // a write failed: it may or may not have happened
}

// ledger records every acknowledged write and every client error.
type ledger struct {
	mu     sync.Mutex // guards the fields below
	objs   map[objKey]objState
	acks   int
	errs   map[string]int
	byWS   map[string][]string // acknowledged creates per workspace
	opsOK  map[string]int      // other successful requests by kind
	errLog []string
}

func newLedger() *ledger {
	return &ledger{objs: map[objKey]objState{}, errs: map[string]int{}, byWS: map[string][]string{}, opsOK: map[string]int{}}
}

func (l *ledger) ack(k objKey, s objState, created bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.objs[k]; ok && old.uncertain {
		s.uncertain = true
	}
	l.objs[k] = s
	l.acks++
	if created {
		l.byWS[k.ws] = append(l.byWS[k.ws], k.name)
	}
}

// markUncertain notes a write cut by the test's own end: not an error,
// but its outcome is unknown.
func (l *ledger) markUncertain(k objKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.objs[k]
	s.uncertain = true
	l.objs[k] = s
}

func (l *ledger) ok(kind string) {
	l.mu.Lock()
	l.opsOK[kind]++
	l.mu.Unlock()
}

// fail records a client error; k, when set, is the object the failed
// write was about, which becomes uncertain.
func (l *ledger) fail(op string, k *objKey, err error) {
	cause := classify(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[op+": "+cause]++
	if len(l.errLog) < 20 {
		l.errLog = append(l.errLog, fmt.Sprintf("%s: %v", op, err))
	}
	if k != nil {
		s := l.objs[*k]
		s.uncertain = true
		l.objs[*k] = s
	}
}

func (l *ledger) errorCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.errs {
		n += c
	}
	return n
}

// connectionErrorsOnly reports whether every error was a connection
// ending mid-request (a request in flight on a process that died), not an
// answer from a server.
func (l *ledger) connectionErrorsOnly() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for cause := range l.errs {
		if strings.Contains(cause, "http ") {
			return false
		}
	}
	return true
}

func (l *ledger) errorRows() [][2]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rows [][2]string
	for c, n := range l.errs {
		rows = append(rows, [2]string{c, fmt.Sprint(n)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}

// classify names an error's cause for the tables.
func classify(err error) string {
	var st apierrors.APIStatus
	switch {
	case errors.As(err, &st):
		s := st.Status()
		return fmt.Sprintf("http %d %s", s.Code, s.Reason)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "EOF"):
		return "connection closed (EOF)"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	msg := err.Error()
	if len(msg) > 60 {
		msg = msg[:60]
	}
	return "other: " + msg
}

// verifyResult is what a check of the ledger against the store found.
type verifyResult struct {
	acked, found, missing, wrongRV, resurrected, uncertain int
	examples                                               []string
}

// verify lists every workspace through c and compares with the ledger.
func (l *ledger) verify(t *testing.T, clients func(ws string) corev1client.ConfigMapInterface, workspaces []string) verifyResult {
	t.Helper()
	stored := map[objKey]string{}
	for _, ws := range workspaces {
		list, err := clients(ws).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing %s: %v", ws, err)
		}
		for _, cm := range list.Items {
			stored[objKey{ws, cm.Name}] = cm.ResourceVersion
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var r verifyResult
	for k, s := range l.objs {
		if s.uncertain {
			r.uncertain++
			continue
		}
		r.acked++
		rv, ok := stored[k]
		switch {
		case s.deleted && ok:
			r.resurrected++
			r.examples = append(r.examples, fmt.Sprintf("%s/%s deleted but present", k.ws, k.name))
		case s.deleted:
			r.found++
		case !ok:
			r.missing++
			r.examples = append(r.examples, fmt.Sprintf("%s/%s acknowledged at rv %s but missing", k.ws, k.name, s.rv))
		case rv != s.rv:
			r.wrongRV++
			r.examples = append(r.examples, fmt.Sprintf("%s/%s rv %s, acknowledged %s", k.ws, k.name, rv, s.rv))
		default:
			r.found++
		}
	}
	return r
}
