package fakecontrol

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// call is the test fake's description of a call, for an observer.
type call struct {
	Op        string
	Throttled bool
}

// faults is the test fake's JSON faults.
type faults struct {
	ThrottleRate    float64 `json:"throttleRate,omitempty"`
	ServerErrorRate float64 `json:"serverErrorRate,omitempty"`
	MaxConcurrent   int     `json:"maxConcurrent,omitempty"`
	Seed            uint64  `json:"seed,omitempty"`
}

// fake is the smallest fake on a Core: /op/NAME answers 200, 429 when throttled, 500 on a server error; calls of
// /free/NAME are never subject to the faults.
type fake struct {
	core    *Core[call]
	control http.Handler
	chosen  string
}

func newFake() *fake {
	f := &fake{core: New[call]()}
	f.control = Control("testfake", f.core, f.setFaults, Endpoint{Path: "choose", Param: "name", Do: func(name string) error {
		if name != "there" {
			return errors.New("testfake: no such thing " + name)
		}
		f.chosen = name
		return nil
	}})
	return f
}

func (f *fake) setFaults(x faults) error {
	if err := CheckShares("throttleRate", x.ThrottleRate, x.ServerErrorRate); err != nil {
		return err
	}
	f.core.SetRates(Rates{Throttle: x.ThrottleRate, ServerError: x.ServerErrorRate, MaxConcurrent: x.MaxConcurrent, Seed: x.Seed,
		Subject: func(service string) bool { return service != "free" }})
	return nil
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/__fake/") {
		f.control.ServeHTTP(w, r)
		return
	}
	service, op, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	a := f.core.Begin(op, service)
	defer a.End()
	a.Observed(call{Op: op, Throttled: a.Fate == Throttle})
	a.Wait()
	switch a.Fate {
	case Throttle:
		w.WriteHeader(http.StatusTooManyRequests)
	case ServerError:
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// TestControl checks the control endpoints: the counts (with __throttled when calls were throttled), their reset,
// the faults (unknown fields and bad shares refused), a fake's own endpoint, a 404 listing them all, and that
// control requests are not counted.
func TestControl(t *testing.T) {
	f := newFake()
	for _, p := range []string{"/api/get", "/api/get", "/api/put"} {
		if code, _ := do(t, f, "GET", p, ""); code != http.StatusOK {
			t.Fatalf("%s: %d", p, code)
		}
	}
	if code, body := do(t, f, "GET", "/__fake/calls", ""); code != http.StatusOK || body != `{"get":2,"put":1}`+"\n" {
		t.Errorf("GET /__fake/calls: %d %q", code, body)
	}
	if code, body := do(t, f, "POST", "/__fake/faults", `{"throttleRate": 1}`); code != http.StatusNoContent {
		t.Fatalf("POST /__fake/faults: %d %s", code, body)
	}
	do(t, f, "GET", "/api/get", "")
	do(t, f, "GET", "/free/list", "")
	if code, body := do(t, f, "GET", "/__fake/calls", ""); code != http.StatusOK || body != `{"__throttled":1,"get":3,"list":1,"put":1}`+"\n" {
		t.Errorf("GET /__fake/calls after a throttled call: %d %q", code, body)
	}
	if code, _ := do(t, f, "POST", "/__fake/reset-calls", ""); code != http.StatusNoContent {
		t.Errorf("POST /__fake/reset-calls: %d", code)
	}
	if diff := cmp.Diff(map[string]int{}, f.core.Calls()); diff != "" || f.core.Throttled() != 0 {
		t.Errorf("after reset: throttled %d, calls (-want +got):\n%s", f.core.Throttled(), diff)
	}
	for _, body := range []string{`{`, `{"throttleRate": 0.1, "nonsense": 1}`, `{"throttleRate": 1.5}`, `{"throttleRate": 0.6, "serverErrorRate": 0.6}`} {
		if code, _ := do(t, f, "POST", "/__fake/faults", body); code != http.StatusBadRequest {
			t.Errorf("POST /__fake/faults %s: %d, want 400", body, code)
		}
	}
	if code, body := do(t, f, "POST", "/__fake/choose?name=nothere", ""); code != http.StatusNotFound || !strings.Contains(body, "no such thing nothere") {
		t.Errorf("POST /__fake/choose of nothing: %d %q, want 404 with the fake's error", code, body)
	}
	if code, _ := do(t, f, "POST", "/__fake/choose?name=there", ""); code != http.StatusNoContent || f.chosen != "there" {
		t.Errorf("POST /__fake/choose?name=there: %d, chosen %q", code, f.chosen)
	}
	want := "testfake: no control endpoint GET /__fake/choose: GET /__fake/calls, POST /__fake/reset-calls, POST /__fake/faults, POST /__fake/choose?name=\n"
	if code, body := do(t, f, "GET", "/__fake/choose", ""); code != http.StatusNotFound || body != want {
		t.Errorf("GET /__fake/choose: %d %q, want 404 %q", code, body, want)
	}
	if diff := cmp.Diff(map[string]int{}, f.core.Calls()); diff != "" {
		t.Errorf("control requests were counted (-want +got):\n%s", diff)
	}
}

// fates makes n calls of op and returns which were throttled (t), failed (e) or passed (.).
func fates(t *testing.T, f *fake, n int) string {
	var b strings.Builder
	for range n {
		switch code, _ := do(t, f, "GET", "/api/op", ""); code {
		case http.StatusTooManyRequests:
			b.WriteByte('t')
		case http.StatusInternalServerError:
			b.WriteByte('e')
		default:
			b.WriteByte('.')
		}
	}
	return b.String()
}

// TestRates checks a share of calls is throttled or fails, the same calls for the same seed and others for
// another, that a call not subject to the faults is never failed, and that the zero Rates fail nothing.
func TestRates(t *testing.T) {
	f := newFake()
	set := func(x faults) {
		t.Helper()
		if err := f.setFaults(x); err != nil {
			t.Fatal(err)
		}
	}
	set(faults{ThrottleRate: 0.3, ServerErrorRate: 0.1, Seed: 7})
	first := fates(t, f, 400)
	if n, e := strings.Count(first, "t"), strings.Count(first, "e"); n < 80 || n > 160 || e < 16 || e > 64 {
		t.Errorf("of 400 calls %d throttled and %d failed; want about 120 and 40", n, e)
	}
	if got := f.core.Throttled(); got != strings.Count(first, "t") {
		t.Errorf("Throttled() = %d, want %d", got, strings.Count(first, "t"))
	}
	set(faults{ThrottleRate: 0.3, ServerErrorRate: 0.1, Seed: 7})
	if again := fates(t, f, 400); again != first {
		t.Errorf("the same seed failed other calls:\n%s\n%s", first, again)
	}
	set(faults{ThrottleRate: 0.3, ServerErrorRate: 0.1, Seed: 8})
	if other := fates(t, f, 400); other == first {
		t.Errorf("seeds 7 and 8 failed the same calls")
	}
	for range 50 {
		if code, _ := do(t, f, "GET", "/free/op", ""); code != http.StatusOK {
			t.Fatalf("a call not subject to the faults: %d", code)
		}
	}
	set(faults{})
	if got := fates(t, f, 50); strings.Trim(got, ".") != "" {
		t.Errorf("without faults: %s", got)
	}
}

// TestMaxConcurrent checks a call arriving while MaxConcurrent calls are in flight is throttled and counted so,
// that the observer sees it as such, that calls not subject to the faults are neither refused nor in flight, and
// that calls go through again once those in flight end.
func TestMaxConcurrent(t *testing.T) {
	f := newFake()
	if err := f.setFaults(faults{MaxConcurrent: 2}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []call
	f.core.Observe(func(c call) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
	})
	entered, release := make(chan struct{}, 2), make(chan struct{})
	f.core.HoldInFlight(func() {
		entered <- struct{}{}
		<-release
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(t, f, "GET", "/api/held", "")
		}()
	}
	<-entered
	<-entered
	if code, _ := do(t, f, "GET", "/api/refused", ""); code != http.StatusTooManyRequests {
		t.Errorf("a call with 2 in flight: %d, want 429", code)
	}
	f.core.HoldInFlight(nil)
	if code, _ := do(t, f, "GET", "/free/other", ""); code != http.StatusOK {
		t.Errorf("a call not subject to the faults with 2 in flight: %d", code)
	}
	close(release)
	wg.Wait()
	if code, _ := do(t, f, "GET", "/api/after", ""); code != http.StatusOK {
		t.Errorf("a call once those in flight ended: %d", code)
	}
	if diff := cmp.Diff(map[string]int{"held": 2, "refused": 1, "other": 1, "after": 1}, f.core.Calls()); diff != "" || f.core.Throttled() != 1 {
		t.Errorf("throttled %d (want 1), calls (-want +got):\n%s", f.core.Throttled(), diff)
	}
	mu.Lock()
	defer mu.Unlock()
	var throttled []string
	for _, c := range seen {
		if c.Throttled {
			throttled = append(throttled, c.Op)
		}
	}
	if diff := cmp.Diff([]string{"refused"}, throttled); diff != "" || len(seen) != 5 {
		t.Errorf("observed %v; throttled (-want +got):\n%s", seen, diff)
	}
}

// TestSetFaultsFlag checks a command's --faults: empty sets nothing, unknown fields and bad values are errors.
func TestSetFaultsFlag(t *testing.T) {
	f := newFake()
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"", true}, {`{"throttleRate": 0.5}`, true}, {`{"throttleRate": 2}`, false}, {`{"nonsense": 1}`, false}, {`{`, false}} {
		if err := SetFaultsFlag(tc.value, f.setFaults); (err == nil) != tc.ok {
			t.Errorf("SetFaultsFlag(%q): %v, want ok %v", tc.value, err, tc.ok)
		}
	}
}
