package engine

import (
	"context"
	"errors"
	"math"
	"sync"
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
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} { // as many as the class's window: all run
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
	ex.workers = math.MaxInt              // start no worker; finish is fed by hand
	ex.dispatch(false, &handoff{}, false) // the jobs are not handed off: none runs
	cs := ex.classOf(0)
	throttled := Retryable(errors.New("throttled"))
	for i := int32(0); i < 3; i++ {
		ex.finish(outcome{job: job{i: i, epoch: 0}, err: throttled}, false)
	}
	if cs.window != 4 {
		t.Fatalf("after a burst of 3 errors, current = %d, want 8 halved once = 4", cs.window)
	}
	rate := cs.rate
	ex.finish(outcome{job: job{i: 3, epoch: cs.epoch - 1}, err: throttled}, false)
	if cs.window != 4 || cs.rate != rate {
		t.Fatalf("after an error from an attempt of the burst, window %d, rate %v; want 4, %v", cs.window, cs.rate, rate)
	}
	ex.finish(outcome{job: job{i: 4, epoch: cs.epoch}, err: throttled}, false)
	if cs.window != 4 || cs.rate != rate*rateCut {
		t.Errorf("after an error from a later attempt, window %d, rate %v; want the window left at 4, the rate cut to %v", cs.window, cs.rate, rate*rateCut)
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
	cs.running = 30 // a full window
	cs.pushedBack(cs.epoch, false, time.Time{})
	if cs.window != 15 {
		t.Fatalf("after a push back, window %d, want 15", cs.window)
	}
	cs.pushedBack(cs.epoch-1, false, time.Time{})
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
	// A push back when fewer tasks ran than the window allowed halves what ran: 5 running and the one that
	// failed.
	cs.running = 5
	cs.pushedBack(cs.epoch, true, time.Unix(1, 0))
	if cs.window != 3 {
		t.Fatalf("after a failure with 6 under way, window %d, want 3", cs.window)
	}
	cs.running = 0
	for range 10 {
		cs.running = cs.window
		cs.pushedBack(cs.epoch, false, time.Time{})
	}
	cs.running = 0
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
	fixed.pushedBack(fixed.epoch, false, time.Time{})
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
	cs.running = 10 // a full window, the attempt that pushes back among them
	ctx := &attempt{Context: context.Background(), class: 1, epoch: cs.epoch,
		run: &runShared{pushed: pushed, stopped: make(chan struct{})}}
	Pushback(ctx)
	p := <-pushed
	classes[p.class].pushedBack(p.epoch, false, time.Time{})
	if cs.window != 5 {
		t.Fatalf("window %d after a push back, want 5", cs.window)
	}
	Pushback(ctx)
	Pushback(ctx) // the queue is full: dropped, not blocked
}

// The ramp rule: by default a class's window starts at half its cap (or 10, if that is more, and never above the
// cap), so that a hundred slow calls ready at once start at once; InitialWindow overrides it.
func TestInitialWindow(t *testing.T) {
	for _, tt := range []struct {
		limit, initial, want int
	}{
		{256, 0, 128}, // the default Concurrency
		{64, 0, 32},
		{12, 0, 10},
		{8, 0, 8},
		{256, 10, 10},
		{4, 10, 4},
	} {
		if got := newClassState(tt.limit, &Options{InitialWindow: tt.initial}).window; got != tt.want {
			t.Errorf("cap %d, InitialWindow %d: window %d, want %d", tt.limit, tt.initial, got, tt.want)
		}
	}
}

// The rate of a class: none until an attempt fails with a retryable error; then a token bucket whose fill rate
// starts at the successes of the last second (or at the halved window, if more), grows fast until the next
// failure, slowly after it, and is cut by each failure of the current epoch; a Pushback leaves it alone.
func TestClassRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cs := newClassState(16, &Options{InitialWindow: 16})
	cs.began, cs.running = t0, 16
	if ok, _ := cs.mayStart(ms(0)); !ok {
		t.Fatal("a class no API pushed back was refused a start")
	}
	for range 30 {
		cs.succeeded()
	}
	cs.pushedBack(cs.epoch, false, ms(10))
	if cs.rate != 0 || cs.window != 8 {
		t.Fatalf("after a Pushback: rate %v, window %d; want no rate, window 8", cs.rate, cs.window)
	}
	cs.pushedBack(cs.epoch, true, ms(10))
	if cs.rate != 30 || cs.window != 4 {
		t.Fatalf("after a retryable failure 10 ms into the run, 30 successes: rate %v, window %d; want 30 (30 over at least a second), window 4", cs.rate, cs.window)
	}
	ok, wait := cs.mayStart(ms(10))
	if ok || wait < time.Second/30 || wait > time.Second/30+time.Microsecond {
		t.Fatalf("a start at once after the cut: ok %v, wait %v; want refused, 1/30 s until a token", ok, wait)
	}
	if ok, _ := cs.mayStart(ms(10).Add(wait)); !ok {
		t.Fatal("refused a start once a token was due")
	}
	for range 5 {
		cs.succeeded()
	}
	if cs.rate != 30+5*rateFastGain {
		t.Fatalf("after 5 successes before the second failure, rate %v, want %v", cs.rate, 30+5*rateFastGain)
	}
	cs.pushedBack(cs.epoch-1, true, ms(100))
	if cs.rate != 50 {
		t.Fatalf("a failure of an attempt that started before the cut cut the rate: %v, want 50", cs.rate)
	}
	cs.pushedBack(cs.epoch, true, ms(100))
	if cs.rate != 50*rateCut {
		t.Fatalf("after the second failure, rate %v, want %v", cs.rate, 50*rateCut)
	}
	cs.succeeded()
	if want := 50*rateCut + rateGain; cs.rate != want {
		t.Fatalf("a success after the second failure: rate %v, want %v", cs.rate, want)
	}
	// After a lull, the bucket holds at most rateBurst's worth of tokens: one here (45 a second * 20 ms < 1).
	if ok, _ := cs.mayStart(ms(10_000)); !ok {
		t.Fatal("refused a start after a lull")
	}
	if ok, _ := cs.mayStart(ms(10_000)); ok {
		t.Fatal("two starts at once after a lull at 45 a second; the bucket saves one token")
	}
	for range 100 {
		cs.pushedBack(cs.epoch, true, ms(10_000))
	}
	if cs.rate != rateMin {
		t.Fatalf("after 100 failures, rate %v, want the least, %v", cs.rate, rateMin)
	}

	fixed := newClassState(16, &Options{FixedConcurrency: true})
	fixed.pushedBack(fixed.epoch, true, ms(0))
	if fixed.rate != 0 {
		t.Fatalf("FixedConcurrency: rate %v after a failure, want none", fixed.rate)
	}
	// Started late, a class counts its successes since its first start: 300 in 3 s.
	late := newClassState(16, &Options{InitialWindow: 2})
	late.began = ms(0)
	for range 300 {
		late.succeeded()
	}
	late.pushedBack(late.epoch, true, ms(3000))
	if late.rate != 100 {
		t.Fatalf("300 successes over 3 s: rate %v, want 100", late.rate)
	}
}

// shell is a task whose first field is another task: the two share an address.
type shell struct {
	Inner classedRef
	Name  string
	needs []Task
}

func (s *shell) Key() Key                                             { return Key{Type: "Shell", Name: s.Name} }
func (s *shell) Deps() []Task                                         { return s.needs }
func (s *shell) Find(ctx context.Context, w struct{}) (*shell, error) { return s, nil }
func (s *shell) CheckChanges(actual, expected, changes *shell) error  { return nil }

// compile finds a dependency by its address first; two tasks of one address (a struct and its first field) are
// both found, each as itself.
func TestDependencyAtASharedAddress(t *testing.T) {
	g := NewGraph[struct{}]()
	s := &shell{Name: "outer"}
	s.Inner.Name = "inner"
	inner := Add(g, &s.Inner)
	outer := Add(g, s)
	Add(g, &shell{Name: "a", needs: []Task{inner}})
	Add(g, &shell{Name: "b", needs: []Task{outer}})
	c, err := g.compile(DryRun)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int32]Key{2: inner.Key(), 3: outer.Key()} {
		deps := c.deps(i)
		if len(deps) != 1 || c.key(deps[0]) != want {
			t.Errorf("%s depends on %v, want %s", c.key(i), deps, want)
		}
	}
}

// step is a task whose Find calls find, when set.
type step struct {
	Name  string
	find  func() error
	after []Task
}

func (s *step) Key() Key     { return Key{Type: "Step", Name: s.Name} }
func (s *step) Deps() []Task { return s.after }
func (s *step) Find(ctx context.Context, w struct{}) (*step, error) {
	if s.find != nil {
		if err := s.find(); err != nil {
			return nil, err
		}
	}
	return s, nil
}
func (s *step) CheckChanges(actual, expected, changes *step) error { return nil }

// runTuned runs g as a dry run with the executor's CPU count, short-attempt bound and hand-off delay set.
func runTuned(t *testing.T, g *Graph[struct{}], procs int, short, handAfter time.Duration) *executor[struct{}] {
	t.Helper()
	c, err := g.compile(DryRun)
	if err != nil {
		t.Fatal(err)
	}
	var opts Options
	opts.defaults()
	ex := newExecutor(c, struct{}{}, opts)
	ex.procs, ex.short, ex.handAfter = procs, short, handAfter
	if _, err := ex.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ex
}

// Tasks that a short task made ready are not handed to more goroutines than the machine has processors: the
// worker that finished it runs them one after the other (here on one processor: one worker for them all).
func TestShortTasksStayWithTheirWorker(t *testing.T) {
	g := NewGraph[struct{}]()
	a := Add(g, &step{Name: "a"})
	for _, name := range []string{"b", "c", "d", "e"} {
		Add(g, &step{Name: name, after: []Task{a}})
	}
	ex := runTuned(t, g, 1, time.Hour, time.Hour) // every attempt is short; no hand-off by the timer
	if ex.workers != 1 || ex.done != 5 {
		t.Errorf("%d workers ran %d tasks; want 1 worker for all 5", ex.workers, ex.done)
	}
}

// A task left ready for a busy worker is handed off after handAfter: the worker's task turned out to wait (here
// for the very task left behind).
func TestTaskLeftForABusyWorkerIsHandedOff(t *testing.T) {
	g := NewGraph[struct{}]()
	a := Add(g, &step{Name: "a"})
	cStarted := make(chan struct{})
	Add(g, &step{Name: "b", after: []Task{a}, find: func() error { // kept by the worker that ran a
		select {
		case <-cStarted:
			return nil
		case <-time.After(10 * time.Second):
			return Terminal(errors.New("c never started while b waited for it"))
		}
	}})
	Add(g, &step{Name: "c", after: []Task{a}, find: func() error { close(cStarted); return nil }})
	ex := runTuned(t, g, 1, time.Hour, time.Millisecond)
	if ex.done != 3 {
		t.Errorf("%d tasks done, want 3", ex.done)
	}
}

// The first tasks of a run, when they turn out short, are not handed to more goroutines than the machine has
// processors either: the run loop starts one per processor and leaves the others ready for them (here on one
// processor: one worker for five independent tasks, where the window would start all five at once).
func TestShortFirstTasksStayWithFewWorkers(t *testing.T) {
	g := NewGraph[struct{}]()
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		Add(g, &step{Name: name})
	}
	ex := runTuned(t, g, 1, time.Hour, time.Hour) // every attempt is short; no hand-off by the timer
	if ex.workers != 1 || ex.done != 5 {
		t.Errorf("%d workers ran %d tasks; want 1 worker for all 5", ex.workers, ex.done)
	}
}

// First tasks that wait are all started once one has run for the short-attempt bound, without the hand-off
// timer: here each waits until all four have started.
func TestWaitingFirstTasksAllStart(t *testing.T) {
	g := NewGraph[struct{}]()
	var started sync.WaitGroup
	started.Add(4)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	for _, name := range []string{"a", "b", "c", "d"} {
		Add(g, &step{Name: name, find: func() error {
			started.Done()
			select {
			case <-all:
				return nil
			case <-time.After(10 * time.Second):
				return Terminal(errors.New("the other first tasks never started while this one waited"))
			}
		}})
	}
	ex := runTuned(t, g, 1, time.Millisecond, time.Hour)
	if ex.done != 4 || ex.workers != 4 {
		t.Errorf("%d workers ran %d tasks, want 4 workers for all 4", ex.workers, ex.done)
	}
}

// The dependencies compile takes from when their tasks were added are the tasks' Deps as they are now: a
// dependency set after Add, one that names a task added later, and one changed to another task are all found.
func TestDependenciesChangedAfterAdd(t *testing.T) {
	g := NewGraph[struct{}]()
	a := Add(g, &step{Name: "a"})
	b := Add(g, &step{Name: "b"})
	late := Add(g, &step{Name: "late"}) // its dependency is set after Add
	changed := Add(g, &step{Name: "changed", after: []Task{a}})
	forward := Add(g, &step{Name: "forward", after: []Task{nil}})
	c := Add(g, &step{Name: "c"})
	late.after = []Task{b}
	changed.after[0] = b
	forward.after[0] = c
	comp, err := g.compile(DryRun)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int32]Key{2: b.Key(), 3: b.Key(), 4: c.Key()} {
		deps := comp.deps(i)
		if len(deps) != 1 || comp.key(deps[0]) != want {
			t.Errorf("%s depends on %v, want %s", comp.key(i), deps, want)
		}
	}
}
