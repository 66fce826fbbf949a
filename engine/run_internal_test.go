package engine

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

type classedRef struct{ ref }

func (c *classedRef) APIClass() string                                          { return "ec2" }
func (c *classedRef) Find(ctx context.Context, w struct{}) (*classedRef, error) { return c, nil }
func (c *classedRef) CheckChanges(actual, expected, changes *classedRef) error  { return nil }

// A burst of throttling errors from attempts that started together cuts the class's concurrency once; an error
// from an attempt that started after the cut cuts it again.
func TestThrottlingBurstCutsOnce(t *testing.T) {
	g := NewGraph[struct{}]()
	for _, name := range []string{"a", "b", "c", "d"} {
		Add(g, &classedRef{ref{Name: name}})
	}
	c, err := g.compile(DryRun)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Concurrency: 10, ClassLimits: map[string]int{"ec2": 8},
		Backoff: time.Hour, MaxBackoff: time.Hour, Deadline: 2 * time.Hour}
	opts.defaults()
	ex := newExecutor(c, struct{}{}, opts)
	defer close(ex.quit)
	ex.workers = math.MaxInt // start no worker: the jobs stay in ex.work, never run; finish is fed by hand
	ex.dispatch()
	cs := ex.classOf(0)
	throttled := Retryable(errors.New("throttled"))
	for i := int32(0); i < 3; i++ {
		ex.finish(outcome{job: job{i: i, epoch: 0}, err: throttled}, false)
	}
	if cs.window != 4 {
		t.Fatalf("after a burst of 3 errors, current = %d, want 8 halved once = 4", cs.window)
	}
	ex.finish(outcome{job: job{i: 3, epoch: cs.epoch}, err: throttled}, false)
	if cs.window != 2 {
		t.Errorf("after an error from a later attempt, current = %d, want 2", cs.window)
	}
	ex.stopRetries()
}

// The window of a class: slow start (one more per success) until the first push back, then one more per round
// of `window` successes; halved on a push back, never below 1 nor above the cap; fixed never moves.
func TestClassWindow(t *testing.T) {
	opts := Options{InitialWindow: 10}
	cs := newClassState(64, &opts)
	if cs.window != 10 {
		t.Fatalf("initial window %d, want 10", cs.window)
	}
	for range 20 {
		cs.succeeded()
	}
	if cs.window != 30 {
		t.Fatalf("after 20 successes in slow start, window %d, want 30", cs.window)
	}
	cs.pushedBack(cs.epoch)
	if cs.window != 15 {
		t.Fatalf("after a push back, window %d, want 15", cs.window)
	}
	cs.pushedBack(cs.epoch - 1)
	if cs.window != 15 {
		t.Fatalf("a push back of an attempt that started before the cut cut again: window %d, want 15", cs.window)
	}
	for range 14 {
		cs.succeeded()
	}
	if cs.window != 15 {
		t.Fatalf("after 14 successes past slow start, window %d, want still 15", cs.window)
	}
	cs.succeeded()
	if cs.window != 16 {
		t.Fatalf("after a round of 15 successes, window %d, want 16", cs.window)
	}
	for range 10 {
		cs.pushedBack(cs.epoch)
	}
	if cs.window != 1 {
		t.Fatalf("after 10 push backs, window %d, want 1", cs.window)
	}
	for range 10000 {
		cs.succeeded()
	}
	if cs.window != 64 {
		t.Fatalf("after many successes, window %d, want the cap 64", cs.window)
	}

	fixed := newClassState(64, &Options{InitialWindow: 10, FixedConcurrency: true})
	fixed.pushedBack(fixed.epoch)
	fixed.succeeded()
	if fixed.window != 64 {
		t.Fatalf("fixed window %d, want 64", fixed.window)
	}
	if small := newClassState(4, &opts); small.window != 4 {
		t.Fatalf("initial window of a class capped at 4: %d", small.window)
	}
}

// Pushback from a task's context reaches its class, with the epoch its attempt started in.
func TestPushbackReachesTheClass(t *testing.T) {
	pushed := make(chan pushback, 1)
	classes := []*classState{newClassState(8, &Options{InitialWindow: 8}), newClassState(64, &Options{InitialWindow: 10})}
	cs := classes[1]
	ctx := context.WithValue(context.Background(), attemptKey{}, &attempt{class: 1, epoch: cs.epoch,
		run: &runShared{pushed: pushed, stopped: make(chan struct{})}})
	Pushback(ctx)
	p := <-pushed
	classes[p.class].pushedBack(p.epoch)
	if cs.window != 5 {
		t.Fatalf("window %d after a push back, want 5", cs.window)
	}
	Pushback(ctx)
	Pushback(ctx) // the queue is full: dropped, not blocked
}
