package fairness

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestHeadBytes(t *testing.T) {
	small := httptest.NewRequest("GET", "/version?x=1", nil)
	small.Header.Set("Authorization", "Bearer t")
	if n := headBytes(small); n != 0 {
		t.Errorf("an ordinary head weighs %d", n)
	}
	big := httptest.NewRequest("GET", "/version?junk="+strings.Repeat("x", 100<<10), nil)
	n := headBytes(big)
	if want := int64(HeadByteWeight * (100<<10 - ordinaryHead)); n < want || n > want+200 {
		t.Errorf("a 100 KiB query weighs %d, want about %d", n, want)
	}
}

func TestSelectorWidthAndTerms(t *testing.T) {
	list := &request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "configmaps"}
	get := &request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "configmaps", Name: "x"}
	q := "labelSelector=" + strings.Repeat("a,", 999) + "a&fieldSelector=metadata.name%3Dx"
	if n := selectorTerms(list, q); n != 1001 {
		t.Errorf("terms of a list = %d, want 1001", n)
	}
	if n := selectorTerms(get, q); n != 0 {
		t.Errorf("terms of a get = %d: its selector is never parsed", n)
	}
	for terms, want := range map[int]uint64{0: 1, 3: 1, 64: 1, 65: 2, 1000: 16, 80000: 40} {
		if got := selectorSeats(terms, 40); got != want {
			t.Errorf("selectorSeats(%d) = %d, want %d", terms, got, want)
		}
	}
}

// A watch's selector evaluation is charged as it happens, and once its
// tenant is in debt the watch's context ends: events evaluated but never
// sent would otherwise go on uncharged.
func TestChargeSelectorEndsWatchInDebt(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now())
	// The default rate, whose watch event costs WatchEventBytes; the
	// fake clock never refills.
	tr := newTraffic(fake, float64(TrafficBytesPerCPU*runtime.GOMAXPROCS(0)), 10000, 5)
	if got := tr.eventBytes; got != WatchEventBytes {
		t.Fatalf("a watch event costs %d at the default rate, want %d", got, WatchEventBytes)
	}
	if got := newTraffic(fake, float64(TrafficBytesPerCPU/32*runtime.GOMAXPROCS(0)), 10000, 5).eventBytes; got != WatchEventBytes/32 {
		t.Fatalf("a watch event costs %d at a 32nd of the default rate, want %d", got, WatchEventBytes/32)
	}
	m, ok := tr.admit(context.Background(), time.Time{}, "mallory", 0)
	if !ok {
		t.Fatal("not admitted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &state{watch: true, cancel: cancel}
	st.meter.Store(m)
	// A watch's checks cost WatchEventBytes each (the event handed to
	// it), a list's SelectorCheckBytes.
	st.ChargeSelector(4) // 8,192 bytes of 10,000
	if ctx.Err() != nil {
		t.Fatal("ended within budget")
	}
	st.ChargeSelector(1) // 10,240: in debt
	if ctx.Err() == nil {
		t.Fatal("a watch whose tenant its selector put in debt goes on")
	}
	// A list is charged, never ended.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	list := &state{cancel: cancel2}
	list.meter.Store(m)
	list.ChargeSelector(1000)
	if ctx2.Err() != nil {
		t.Error("a list was ended")
	}
	var tokens float64
	tr.do("mallory", func(b *bytesBucket, _ time.Time) { tokens = b.tokens })
	if want := 10000.0 - 5*WatchEventBytes - 4*1000; tokens != want {
		t.Errorf("tokens %v, want %v", tokens, want)
	}
	// An exempt request has no meter: nothing to charge.
	(&state{}).ChargeSelector(1 << 20)
}
