package hub

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	clocktesting "k8s.io/utils/clock/testing"

	wscheme "github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/fairness"
)

// Issue 24, outside attack review: the rows about the request path's
// fairness that the review left open. r24:3 (an existence oracle through
// the share of 429s) and r24:34 (floods of unauthenticated JWTs) run
// against real hubs; r24:36 (a queued request waited 24.7 s) runs the
// hub's flow control in-process on a fake clock. Every row counts
// outcomes, never times.

// reviewFairTokens are the static tokens of the r24 hubs: mallory attacks,
// alice is the victim, carol, dave and erin hold seats, grace probes.
const reviewFairTokens = `alice-token,alice,alice-uid,"devs"
mallory-token,mallory,mallory-uid,"devs"
carol-token,carol,carol-uid,"devs"
dave-token,dave,dave-uid,"devs"
erin-token,erin,erin-uid,"devs"
grace-token,grace,grace-uid,"devs"
hubadmin-token,hubadmin,hubadmin-uid,
`

// startReviewFairHub starts a hub with the r24 tokens, hubadmin as an
// administrator and loopback as a trusted proxy (rows speak from
// addresses of their own with X-Forwarded-For), plus args.
func startReviewFairHub(t *testing.T, args ...string) *attackEnv {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(reviewFairTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: append([]string{"--token-auth-file", tokens, "--admin-user", "hubadmin",
		"--trusted-proxy-cidrs", "127.0.0.1/32,::1/128"}, args...)})
	e := &attackEnv{t: t, h: h, vars: map[string]string{}, tokens: map[string]string{"admin": h.Token, "hubadmin": "hubadmin-token"}}
	// hubadmin authenticates from loopback before any flood, so the
	// failure throttle knows its token there.
	if code, body := h.doAs(e.tokens["hubadmin"], http.MethodGet, "/version", ""); code != http.StatusOK {
		t.Fatalf("hubadmin: %d %s", code, body)
	}
	for _, who := range []string{"alice", "mallory", "carol", "dave", "erin", "grace"} {
		e.tokens[who] = who + "-token"
		w, code, body := h.whoamiAs(e.tokens[who])
		if code != http.StatusOK || w.Home == nil {
			t.Fatalf("whoami %s: %d %s", who, code, body)
		}
		e.vars[who+"Home"] = w.Home.Path
	}
	e.vars["n"] = fmt.Sprint(time.Now().UnixNano())
	return e
}

// reply is a response as a client sees it, for comparing answers; the
// workspace the caller named is {T} in its body.
type reply struct {
	code       int
	retryAfter string
	body       string
}

func (a reply) String() string {
	return fmt.Sprintf("%d (Retry-After %q) %.300s", a.code, a.retryAfter, a.body)
}

// replyTo sends s and returns its reply, ws (expanded) replaced by {T}.
func replyTo(e *attackEnv, s step, ws string) reply {
	code, hdr, body := e.sendFull(s, e.vars)
	a := reply{code: code, body: strings.ReplaceAll(body, expand(ws, e.vars), "{T}")}
	if hdr != nil {
		a.retryAfter = hdr.Get("Retry-After")
	}
	return a
}

// floodReplies sends s n times at once and returns the distinct replies
// with their counts.
func floodReplies(e *attackEnv, s step, ws string, n int) map[reply]int {
	seen := map[reply]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := replyTo(e, s, ws)
			mu.Lock()
			seen[a]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return seen
}

// holdList sends GET path as who over HTTP/1.1 and never reads the body:
// the list, far larger than what the sockets buffer, keeps its handler
// writing and so its seats taken until the returned func cancels it.
func holdList(e *attackEnv, who, path string) func() {
	base := e.h.client().Transport.(*http.Transport)
	tr := &http.Transport{TLSClientConfig: base.TLSClientConfig.Clone(), DisableCompression: true,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.h.URL+expand(path, e.vars), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[who])
	go func() {
		// Cancelling the request closes its connection, body unread.
		if resp, err := (&http.Client{Transport: tr}).Do(req); err == nil {
			<-ctx.Done()
			_ = resp.Body.Close()
		}
	}()
	return cancel
}

// TestAttackLimitsReviewFair: rows r24:3 and r24:34 on one hub whose
// read-only budget is small: 10 seats, 3 per tenant, 3 for one request
// at most.
func TestAttackLimitsReviewFair(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t, "--max-requests-inflight", "10", "--max-requests-inflight-tenant-fraction", "0.3")
	h := e.h

	t.Run("r24:3/the 429 share does not tell a hidden workspace from a missing one", func(t *testing.T) {
		// The outside review: 200 concurrent GETs to a workspace that
		// exists but mallory may not see got about 4% 429s, to a missing
		// one about 67%, although single answers were alike. Causes: a
		// list's cost was learned from whoever listed there (alice's own
		// lists made mallory's cheap in alice's home, and a missing
		// workspace's cost the whole share), and a missing workspace cost
		// quorum reads while the request held its seats.
		hiddenWS, missingWS := "{aliceHome}", "root:users:nobody-{n}"
		hidden, missing := cmPath("/clusters/"+hiddenWS), cmPath("/clusters/"+missingWS)
		// alice lists her home: its size is learned (one seat).
		if code, body := e.as("alice", http.MethodGet, hidden, "", e.vars); code != http.StatusOK {
			t.Fatalf("alice's list: %d %s", code, body)
		}

		// Three other tenants take 9 of the 10 read-only seats with lists
		// of a shared workspace (18 MB, which no socket buffers) that they
		// never read. One seat is left: a list of known small size fits,
		// one costing a whole share (3) waits, then gets 429.
		shared := "shared-" + e.vars["n"]
		h.createWorkspace("root", shared)
		e.vars["shared"] = "root:" + shared
		for i := 0; i < 20; i++ {
			raw := make([]byte, 675<<10)
			_, _ = rand.Read(raw)
			cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-%d"},"data":{"d":%q}}`, i, base64.StdEncoding.EncodeToString(raw))
			if err := e.wantAs(http.StatusCreated, "hubadmin", http.MethodPost, cmPath("/clusters/{shared}"), cm, e.vars); err != nil {
				t.Fatal(err)
			}
		}
		holders := []string{"carol", "dave", "erin"}
		for _, who := range holders {
			rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"view-` + who + `"},` +
				`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"` + who + `"}]}`
			if err := e.wantAs(http.StatusCreated, "hubadmin", http.MethodPost, "/clusters/{shared}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rb, e.vars); err != nil {
				t.Fatal(err)
			}
			// A get, not a list: nothing is learned of the list's size.
			eventually(t, 30*time.Second, func() error {
				return e.wantAs(http.StatusOK, who, http.MethodGet, cmPath("/clusters/{shared}")+"/big-0", "", e.vars)
			})
		}
		var release []func()
		defer func() {
			for _, r := range release {
				r()
			}
		}()
		for _, who := range holders {
			release = append(release, holdList(e, who, cmPath("/clusters/{shared}")))
		}
		// grace's list there is denied, so its size is never learned and
		// it costs her whole share: refused (after the queue) once the
		// holders hold their seats. Untimed: the deadline only bounds a
		// broken hub.
		probe := step{as: "grace", method: http.MethodGet, path: cmPath("/clusters/{shared}")}
		if err := saturated(e, e.vars, probe); err != nil {
			t.Fatalf("the holders never held their seats: %v", err)
		}

		// One list each, one after the other (two requests of one tenant
		// wait in one queue, the second behind the first), while one seat
		// is free.
		var got [2]reply
		for i, ws := range []string{hiddenWS, missingWS} {
			got[i] = replyTo(e, step{as: "mallory", method: http.MethodGet, path: cmPath("/clusters/" + ws)}, ws)
		}
		t.Logf("one seat free: hidden %v; missing %v", got[0], got[1])
		if got[0] != got[1] {
			t.Errorf("mallory's list of alice's hidden home and of a missing workspace were answered differently while the budget was nearly used up (the cost told them apart):\nhidden:  %v\nmissing: %v", got[0], got[1])
		}
		for _, r := range release {
			r()
		}
		release = nil
		// Seats come back once the holders' connections are gone.
		eventually(t, 60*time.Second, func() error {
			if code, body := e.send(probe, e.vars); code != http.StatusForbidden {
				return fmt.Errorf("grace's probe: %d %.200s", code, body)
			}
			return nil
		})

		// The flood of the review: every answer to either workspace is one
		// of the same two, the denial or the refusal.
		answers := map[string]map[reply]int{
			"hidden":  floodReplies(e, step{as: "mallory", method: http.MethodGet, path: hidden}, hiddenWS, 200),
			"missing": floodReplies(e, step{as: "mallory", method: http.MethodGet, path: missing}, missingWS, 200),
		}
		kinds := map[int]map[reply]bool{}
		for target, seen := range answers {
			var summary []string
			for a, n := range seen {
				summary = append(summary, fmt.Sprintf("%d×%d", n, a.code))
				switch {
				case a.code == http.StatusForbidden && strings.Contains(a.body, "workspace access not permitted"):
				case a.code == http.StatusTooManyRequests && a.retryAfter != "" && strings.Contains(a.body, `"reason":"TooManyRequests"`):
				default:
					t.Errorf("%s: unexpected answer %v", target, a)
				}
				if kinds[a.code] == nil {
					kinds[a.code] = map[reply]bool{}
				}
				kinds[a.code][a] = true
			}
			sort.Strings(summary)
			t.Logf("flood of 200 to the %s workspace: %s", target, strings.Join(summary, ", "))
		}
		for code, distinct := range kinds {
			if len(distinct) != 1 {
				var list []string
				for a := range distinct {
					list = append(list, a.String())
				}
				t.Errorf("%d answers differ between the hidden and the missing workspace:\n%s", code, strings.Join(list, "\n"))
			}
		}
	})

	t.Run("r24:34/a flood of bogus JWTs from one address is throttled, the victim is served", func(t *testing.T) {
		const addr = "203.0.113.34"
		// carol worked from the flooder's address before (a neighbour
		// behind the same NAT), and mallory mints a service-account token
		// in her home that has never been used.
		if code, body := e.send(step{as: "carol", method: http.MethodGet, path: "/api/whoami", header: map[string]string{"X-Forwarded-For": addr}}, e.vars); code != http.StatusOK {
			t.Fatalf("carol from %s: %d %s", addr, code, body)
		}
		if err := e.wantAs(http.StatusCreated, "mallory", http.MethodPost, "/clusters/{malloryHome}/api/v1/namespaces/default/serviceaccounts",
			`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"fresh"}}`, e.vars); err != nil {
			t.Fatal(err)
		}
		code, body := e.as("mallory", http.MethodPost, "/clusters/{malloryHome}/api/v1/namespaces/default/serviceaccounts/fresh/token",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`, e.vars)
		var tr struct {
			Status struct{ Token string } `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &tr); code != http.StatusCreated || err != nil || tr.Status.Token == "" {
			t.Fatalf("token request: %d %v %s", code, err, body)
		}
		fresh := tr.Status.Token

		var mu sync.Mutex
		codes := map[int]int{}
		var odd []string
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 40; i++ {
					s := step{method: http.MethodGet, path: cmPath("/clusters/{aliceHome}"),
						header: map[string]string{"Authorization": "Bearer " + bogusJWT(), "X-Forwarded-For": addr}}
					code, hdr, body := e.sendFull(s, e.vars)
					mu.Lock()
					codes[code]++
					switch {
					case code == http.StatusUnauthorized:
					case code == http.StatusTooManyRequests && hdr.Get("Retry-After") != "" && strings.Contains(body, `"reason":"TooManyRequests"`):
					default:
						odd = append(odd, fmt.Sprintf("%d %.200s", code, body))
					}
					mu.Unlock()
				}
			}()
		}
		// The victim, meanwhile: her own lists and writes, one after
		// another, from her own address.
		var failed []string
		for i := 0; i < 40; i++ {
			s := step{as: "alice", method: http.MethodGet, path: cmPath("/clusters/{aliceHome}"), want: http.StatusOK}
			if i%2 == 1 {
				s = step{as: "alice", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}"), body: cmJSON(fmt.Sprintf("victim34-%d-{n}", i)), want: http.StatusCreated}
			}
			if code, body := e.send(s, e.vars); code != s.want {
				failed = append(failed, fmt.Sprintf("%s %d %.200s", s.method, code, body))
			}
		}
		wg.Wait()
		t.Logf("320 bogus JWTs from %s: %v; victim: %d of 40 failed", addr, codes, len(failed))
		if codes[http.StatusTooManyRequests] == 0 {
			t.Errorf("none of 320 bogus JWTs from one address was throttled: every one was evaluated (%v)", codes)
		}
		if len(odd) != 0 {
			t.Errorf("unexpected answers to the flood: %s", strings.Join(odd, "; "))
		}
		if len(failed) != 0 {
			t.Errorf("victim: %d of 40 failed: %s", len(failed), strings.Join(failed, "; "))
		}
		// Behind the flooded address: bogus JWTs are refused unevaluated
		// once what the address earned back since the flood (a token a
		// second, at most the burst of 20, however slow this machine
		// was) is spent: a 429 within burst+1 tries, never a timing.
		throttled := false
		for i := 0; i < 25 && !throttled; i++ {
			code, body := e.send(step{method: http.MethodGet, path: "/api/whoami", header: map[string]string{"Authorization": "Bearer " + bogusJWT(), "X-Forwarded-For": addr}}, e.vars)
			switch code {
			case http.StatusTooManyRequests:
				throttled = true
			case http.StatusUnauthorized:
			default:
				t.Fatalf("bogus JWT via %s: %d %.200s", addr, code, body)
			}
		}
		if !throttled {
			t.Errorf("25 bogus JWTs via %s after the flood: none refused with 429", addr)
		}
		// The neighbour's known token and a token the hub minted are
		// served behind it.
		for _, s := range []step{
			{as: "carol", method: http.MethodGet, path: "/api/whoami", header: map[string]string{"X-Forwarded-For": addr}, want: http.StatusOK},
			{method: http.MethodGet, path: "/clusters/{malloryHome}/api/whoami", header: map[string]string{"Authorization": "Bearer " + fresh, "X-Forwarded-For": addr}, want: http.StatusOK},
			// A single bad JWT from elsewhere is an ordinary 401.
			{method: http.MethodGet, path: "/api/whoami", header: map[string]string{"Authorization": "Bearer " + bogusJWT(), "X-Forwarded-For": "203.0.113.134"}, want: http.StatusUnauthorized},
		} {
			if code, body := e.send(s, e.vars); code != s.want {
				t.Errorf("%s %s as %q via %s: %d, want %d: %.200s", s.method, expand(s.path, e.vars), s.as, s.header["X-Forwarded-For"], code, s.want, body)
			}
		}
	})
}

// TestAttackLimitsReviewAuthnTotal (r24:34, in total): failures spread
// over many addresses, each within its own budget, are bounded by the
// hub-wide one; known-good callers are still served.
func TestAttackLimitsReviewAuthnTotal(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t, "--authn-failure-rate-limit-total", "1", "--authn-failure-rate-burst-total", "100")
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	// 15 addresses, 10 bogus JWTs each: half of each one's own burst.
	for a := 0; a < 15; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				code, _ := e.send(step{method: http.MethodGet, path: "/api/whoami",
					header: map[string]string{"Authorization": "Bearer " + bogusJWT(), "X-Forwarded-For": fmt.Sprintf("198.51.100.%d", 100+a)}}, e.vars)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("150 bogus JWTs from 15 addresses: %v", codes)
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != 150 {
		t.Errorf("failures spread over addresses were not bounded hub-wide: %v", codes)
	}
	for _, who := range []string{"alice", "hubadmin", "admin"} {
		if err := e.wantAs(http.StatusOK, who, http.MethodGet, "/api/whoami", "", e.vars); err != nil {
			t.Errorf("known-good caller during the flood: %v", err)
		}
	}
}

// bogusJWT is a JWT-shaped bearer token nobody signed.
func bogusJWT() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"ES256","kid":"x"}`)) + "." +
		enc.EncodeToString([]byte(`{"iss":"https://127.0.0.1","sub":"mallory"}`)) + "." + enc.EncodeToString(b)
}

// TestAttackLimitsReviewQueueWait (r24:36): one queued request of the
// review waited 24.7 s, past the 5 s queue limit. The wait was counted
// from the moment the flow control took the request, not from its
// arrival: time before the queues (the connection, authentication,
// impersonation, naming the tenant, which may read etcd) was never
// counted, and kubectl retries a 429 with Retry-After by itself, up to
// ten times, so each wait it sees adds up. Now one deadline from the
// request's arrival covers both queue levels. This row runs the hub's
// flow control as the hub arranges it (fairness.WithState around
// upstream's filter around the Controller, hub/server/config.go), in
// process, on a fake clock: no timing is asserted. The fake clock starts
// ten years ahead, so upstream's own bound (a minute from arrival, on the
// real clock) never fires; the wait is an hour, so that only the
// Controller's bound on the fake clock can refuse.
func TestAttackLimitsReviewQueueWait(t *testing.T) {
	t.Parallel()
	const wait = time.Hour
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	c, err := fairness.NewController(fairness.ControllerConfig{
		Keyer: fairness.Keyer{IsAdmin: func(user.Info) bool { return false }}, Limits: fairness.NewLimits(4, 4, 0.5),
		QueueLength: 5, HubQueues: 8, QueueWait: wait, Clock: eventclock.Real{}, WaitClock: fake,
	})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan string)
	release := map[string]chan struct{}{"mallory": make(chan struct{}), "alice": make(chan struct{}), "carol": make(chan struct{})}
	gate := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := apirequest.UserFrom(r.Context())
		entered <- u.GetName()
		<-release[u.GetName()]
		w.WriteHeader(http.StatusCreated)
	})
	notLong := func(*http.Request, *apirequest.RequestInfo) bool { return false }
	chain := fairness.WithState(genericfilters.WithPriorityAndFairness(gate, notLong, c, nil, time.Minute), wscheme.NewCodecs(wscheme.New()))
	type sent struct {
		w        *httptest.ResponseRecorder
		answered chan int
	}
	send := func(who string, arrived time.Time) sent {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", nil)
		ctx := apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: who})
		ctx = apirequest.WithRequestInfo(ctx, &apirequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: "default"})
		ctx = apirequest.WithReceivedTimestamp(ctx, arrived)
		s := sent{w: httptest.NewRecorder(), answered: make(chan int, 1)}
		go func() { chain.ServeHTTP(s.w, r.WithContext(ctx)); s.answered <- s.w.Code }()
		return s
	}
	hold := func(who string) sent {
		s := send(who, fake.Now())
		if got := <-entered; got != who {
			t.Fatalf("%s let in, want %s", got, who)
		}
		return s
	}
	// waiting polls the Controller's queues (not the clock) until inTenant
	// requests wait in tenants' queues and inHub in the hub's.
	waiting := func(inTenant, inHub int) {
		for {
			if tq, hq := c.Waiting(); tq == inTenant && hq == inHub {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	pending := func(s sent, what string) {
		t.Helper()
		select {
		case code := <-s.answered:
			t.Fatalf("%s: answered %d before its wait was up: %s", what, code, s.w.Body)
		default:
		}
	}
	refused := func(s sent, what string) {
		t.Helper()
		code := <-s.answered
		if code != http.StatusTooManyRequests || s.w.Header().Get("Retry-After") == "" || !strings.Contains(s.w.Body.String(), `"reason":"TooManyRequests"`) {
			t.Fatalf("%s: %d, Retry-After %q: %s", what, code, s.w.Header().Get("Retry-After"), s.w.Body)
		}
	}

	// mallory's share is 2 of the hub's 4 mutating seats: she takes it.
	held := []sent{hold("mallory"), hold("mallory")}
	// A request that spent 59 minutes before reaching the queue has one
	// minute left to wait.
	late := send("mallory", fake.Now().Add(-wait+time.Minute))
	waiting(1, 0)
	fake.Step(time.Minute - time.Second)
	pending(late, "late request, a second before its hour")
	fake.Step(time.Second)
	refused(late, "late request at its hour")

	// alice fills the hub; mallory's next request waits 40 minutes in her
	// queue, then (the seat she frees going to carol, who waited in the
	// hub's queue) in the hub's queue: an hour in all, then 429.
	held = append(held, hold("alice"), hold("alice"))
	queued := send("mallory", fake.Now())
	waiting(1, 0)
	fake.Step(40 * time.Minute)
	carol := send("carol", fake.Now())
	waiting(1, 1)
	release["mallory"] <- struct{}{}
	if got := <-entered; got != "carol" {
		t.Fatalf("%s let in, want carol", got)
	}
	waiting(0, 1)
	fake.Step(19 * time.Minute)
	pending(queued, "59 minutes after arrival")
	fake.Step(time.Minute)
	refused(queued, "an hour after arrival, 40 minutes of it in the tenant's queue")

	for _, ch := range release {
		close(ch)
	}
	for _, s := range append(held, carol) {
		if code := <-s.answered; code != http.StatusCreated {
			t.Fatalf("held request answered %d", code)
		}
	}
}
