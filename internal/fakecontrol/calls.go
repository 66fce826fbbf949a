package fakecontrol

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"time"
)

// Fate is what the fault injection makes of one call.
type Fate int

const (
	// Pass: the call is answered.
	Pass Fate = iota
	// Throttle: the call is refused with the service's throttling answer.
	Throttle
	// ServerError: the call is answered with the service's server error.
	ServerError
)

// Rates is the fault injection every API call goes through. The zero Rates injects nothing.
type Rates struct {
	// Throttle and ServerError are the shares of calls (0 to 1, together at most 1) answered as throttled and as
	// a server error, drawn from a generator seeded by Seed (0: a fixed seed), so that a seed fails the same
	// calls every time.
	Throttle, ServerError float64
	// Latency delays every call subject to the faults, refused or not.
	Latency time.Duration
	// MaxConcurrent, when positive, refuses as throttled a call that arrives while this many calls subject to the
	// faults are being answered, before any of its work: an API that throttles above a concurrency, as a token
	// bucket does to a burst. A refused call is not in flight itself.
	MaxConcurrent int
	Seed          uint64
	// Subject says which calls the faults apply to, by the service a call is of (nil: every call).
	Subject func(service string) bool
}

// CheckShares checks a fake's two shares of failing calls, named as in its JSON faults.
func CheckShares(throttleName string, throttle, serverError float64) error {
	if throttle < 0 || throttle > 1 || serverError < 0 || serverError > 1 || throttle+serverError > 1 {
		return fmt.Errorf("faults: %s %v and serverErrorRate %v must be shares between 0 and 1, together at most 1",
			throttleName, throttle, serverError)
	}
	return nil
}

// Core counts a fake's API calls and decides their fate under the fault injection. C is the fake's description
// of a call, for an observer (Observe). Make one with New; it is safe for concurrent use, and has a lock of its
// own, apart from the fake's state.
type Core[C any] struct {
	mu sync.Mutex
	// calls counts API calls by operation; throttled those refused as throttled; inFlight is how many calls
	// subject to the faults are being answered now (Rates.MaxConcurrent).
	calls               map[string]int
	throttled, inFlight int
	rates               Rates
	rng                 *rand.Rand
	observe             func(C)
	hold                func()
}

// New returns a Core with no call counted and no fault.
func New[C any]() *Core[C] {
	c := &Core[C]{calls: map[string]int{}}
	c.SetRates(Rates{})
	return c
}

// Calls returns the per-operation call counts. Every attempt is a call, refused or not.
func (c *Core[C]) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// Throttled returns how many calls were refused as throttled (Rates.Throttle, Rates.MaxConcurrent) since New or
// ResetCalls. They are counted in Calls too.
func (c *Core[C]) Throttled() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.throttled
}

// ResetCalls zeroes the call counts and the count of throttled calls.
func (c *Core[C]) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
	c.throttled = 0
}

// Observe makes fn see every API call (nil: none), as it arrives, from the goroutine that answers it and without
// any lock held: fn must be safe for concurrent use and may call the fake.
func (c *Core[C]) Observe(fn func(C)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observe = fn
}

// SetRates sets the fault injection, seeding its generator afresh. The fake checks the rates first (CheckShares).
func (c *Core[C]) SetRates(r Rates) {
	seed := r.Seed
	if seed == 0 {
		seed = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rates = r
	c.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// HoldInFlight makes every call counted in flight call fn before it is answered (nil: none): a test's way to
// have calls in flight when it wants them.
func (c *Core[C]) HoldInFlight(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold = fn
}

// Attempt is one API call being answered: Begin counts it and decides its fate.
type Attempt[C any] struct {
	// Fate is what the faults make of the call.
	Fate     Fate
	c        *Core[C]
	latency  time.Duration
	inFlight bool
	hold     func()
	observe  func(C)
}

// Begin counts a call of op, of service, and decides its fate. A call subject to the faults that passes is in
// flight until End. The fake then calls Observed, Wait and, when the fate is not Pass, answers with its
// service's error instead of doing the call's work.
func (c *Core[C]) Begin(op, service string) *Attempt[C] {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
	a := &Attempt[C]{c: c, observe: c.observe}
	r := c.rates
	if r.Subject != nil && !r.Subject(service) {
		return a
	}
	a.latency = r.Latency
	if r.MaxConcurrent > 0 && c.inFlight >= r.MaxConcurrent {
		a.Fate = Throttle // drawing nothing from the generator
	} else {
		switch p := c.rng.Float64(); {
		case p < r.Throttle:
			a.Fate = Throttle
		case p < r.Throttle+r.ServerError:
			a.Fate = ServerError
		}
	}
	if a.Fate == Throttle {
		c.throttled++
	}
	if a.Fate == Pass {
		c.inFlight++
		a.inFlight, a.hold = true, c.hold
	}
	return a
}

// Observed hands the observer, if any, the fake's description of the call.
func (a *Attempt[C]) Observed(call C) {
	if a.observe != nil {
		a.observe(call)
	}
}

// Wait holds the call as the faults say: the test's hold on calls in flight (HoldInFlight), then the latency.
func (a *Attempt[C]) Wait() {
	if a.hold != nil {
		a.hold()
	}
	if a.latency > 0 {
		time.Sleep(a.latency)
	}
}

// End ends the call: it is no longer in flight.
func (a *Attempt[C]) End() {
	if !a.inFlight {
		return
	}
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	a.c.inFlight--
	a.inFlight = false
}
