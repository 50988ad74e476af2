package fairness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/apis/scheme"
)

// TestProviderRouteBodiesCharged: what a provider reads of a request's
// body on a provider route is charged to the caller's tenant, as on the
// API chain; a hub admin's is not (the sixth session's upgrade work left
// uploads to providers uncharged).
func TestProviderRouteBodiesCharged(t *testing.T) {
	for _, tt := range []struct {
		who  string
		body int
		want float64 // bucket tokens after the request (burst 1,000)
	}{
		{"bob", 3000, -2000},
		{"bob", 0, 1000},
		{"hubadmin", 3000, 1000},
	} {
		t.Run(tt.who, func(t *testing.T) {
			fake := clocktesting.NewFakeClock(time.Now())
			api, err := NewController(ControllerConfig{
				Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 10, TenantMutating: 10},
				QueueLength: 5, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: fake,
				TrafficRate: 1000, TrafficBurst: 1000,
			})
			if err != nil {
				t.Fatal(err)
			}
			f := providerFilter(t, Limits{ReadOnly: 10, Mutating: 10, TenantReadOnly: 5, TenantMutating: 5}, 0, fake, api)
			read := 0
			h := f.WithProviderLimit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, _ := io.Copy(io.Discard, r.Body)
				read = int(n)
				w.WriteHeader(http.StatusNoContent)
			}), scheme.NewCodecs(scheme.New()))
			r := httptest.NewRequest(http.MethodPost, "/services/providers/example/upload", strings.NewReader(strings.Repeat("x", tt.body)))
			ctx := apirequest.WithReceivedTimestamp(apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: tt.who}), fake.Now())
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r.WithContext(ctx))
			if w.Code != http.StatusNoContent || read != tt.body {
				t.Fatalf("answered %d, provider read %d bytes; want 204, %d", w.Code, read, tt.body)
			}
			tenant, _ := testKeyer().Tenant(t.Context(), &user.DefaultInfo{Name: tt.who})
			got := float64(1000)
			api.traffic.buckets.Peek(tenant, func(b *bytesBucket) { got = b.tokens })
			if got != tt.want {
				t.Errorf("%s's budget after a %d-byte upload: %v tokens, want %v", tt.who, tt.body, got, tt.want)
			}
		})
	}
}
