package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Target says what Run does with the changes it finds.
type Target string

const (
	// Apply renders every change: the task must implement Renderer[T, C].
	Apply Target = "apply"
	// DryRun finds and checks every task and records the changes instead of rendering them. It needs nothing
	// beyond Resource.
	DryRun Target = "dryrun"
)

// Options control a run. The zero value is a dry run with the defaults below.
type Options struct {
	Target Target // DryRun when empty

	// Concurrency is the most tasks that run at once, in all, and the cap of every API class's window
	// (default 256). How many of one class run at once adapts to its API (see classState): InitialWindow at
	// first, more while its calls succeed, half as many each time it pushes back.
	Concurrency int
	// ClassLimits caps the window of one API class (see Classed), such as {"ec2": 64} (default Concurrency).
	ClassLimits map[string]int
	// InitialWindow is how many tasks of one API class run at once at first (default: half the class's cap, 128
	// with the default Concurrency, or 10 if that is more; never more than the cap).
	InitialWindow int
	// FixedConcurrency turns adaptation off: every class runs as many tasks at once as its cap allows, from the
	// start, whatever its API says. For comparisons; the adaptive default is faster and kinder to APIs.
	FixedConcurrency bool
	// Deadline is how long a not-ready or retryable task is retried before it fails (default 10 minutes).
	Deadline time.Duration
	// Backoff is the first retry delay (default 1s); each retry doubles it, up to MaxBackoff (default 30s), with
	// jitter.
	Backoff, MaxBackoff time.Duration

	// Logger receives the engine's structured logs; each task logs with task=<key> (default: slog.Default()).
	Logger *slog.Logger
	// Progress, when set, receives "Tasks: N done / M total; K running" at most once a second and at the end.
	Progress io.Writer
}

func (o *Options) defaults() {
	if o.Target == "" {
		o.Target = DryRun
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 256
	}
	if o.Deadline <= 0 {
		o.Deadline = 10 * time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Result is what a run did, or in a dry run would do.
type Result struct {
	// Plan lists the changes: found and recorded in a dry run, found and rendered by Apply.
	Plan *Plan
	// Done counts the tasks that finished, changed or not.
	Done int
}

type taskState uint8

const (
	waiting taskState = iota
	running
	finished
	failed
	skipped
	cutShort // cancelled while it rendered: its change may be partly made
)

type job struct {
	i       int32
	epoch   uint32 // the class's epoch when the attempt started
	attempt uint32 // 1 for the first
}

type outcome struct {
	job
	change *Change
	err    error
}

// Run validates g for opts.Target and runs it against world. Tasks start as soon as their dependencies are done
// (a ready queue, not waves), within the concurrency limits. A failed task skips only its dependents; the
// returned error is a *RunError that lists every failure. A graph that does not validate returns a
// *ValidationError before any Find or Render.
func Run[C any](ctx context.Context, g *Graph[C], world C, opts Options) (*Result, error) {
	opts.defaults()
	c, err := g.compile(opts.Target)
	if err != nil {
		return nil, err
	}
	ex := newExecutor(c, world, opts)
	return ex.run(ctx)
}

type executor[C any] struct {
	c     *compiled[C]
	world C
	opts  Options
	ctx   context.Context // the run's

	// mu guards what follows. The run loop and the workers share it: a worker that finished an attempt records
	// it and starts the tasks it made ready itself, running the first of them at once (no hand-off to another
	// goroutine on the path from a task to its dependent); the run loop handles what comes from outside the
	// workers (retry and token timers, push backs, the progress tick, cancellation) and sees the run end.
	mu       sync.Mutex
	state    []taskState
	pending  []int32 // dependencies not yet finished
	attempts []uint32
	began    time.Time       // the run's start
	started  []time.Duration // the first attempt's, since began: for the deadline (a time.Time is 3 times bigger)
	firsts   []attempt       // the contexts of the first attempts, allocated together
	errs     []*TaskError
	changes  []Change

	classes  []*classState // the class of task i is classes[classIdx[i]]; classIdx does not change
	classIdx []int32

	running, done, retrying int
	cancelled               bool
	work                    chan job      // to the workers; room for every running task: a send never blocks
	wake                    chan struct{} // a worker tells the run loop that nothing runs any more
	retries                 chan int32
	pushbacks               chan pushback
	quit                    chan struct{}
	shared                  *runShared // what every attempt's context holds
	workers                 int
	workerCtx               context.Context
	timers                  map[int32]*time.Timer
	tokenTimer              *time.Timer // armed while ready tasks wait for a class's token
	tokenDue                time.Time   // when it fires, if tokenArmed
	tokenArmed              bool
	handTimer               *time.Timer // armed while ready tasks are left for busy workers (dispatch)
	handArmed               bool
	// leave: the run loop, too, leaves ready tasks for busy workers while as many tasks run as there are
	// processors (see probe). Cleared when the first tasks turn out to wait, or when the hand-off timer fires.
	leave            bool
	firstShort       atomic.Bool   // some attempt took less than short (set by the workers, read by probe)
	firstBegan       atomic.Int64  // when a worker began the first attempt, since began, plus one; 0: none yet
	procs            int           // GOMAXPROCS
	short, handAfter time.Duration // shortAttempt and handAfter (tests change them)
}

const (
	// shortAttempt: an attempt that took less did not wait for anything (no API answers that fast): see dispatch.
	shortAttempt = 50 * time.Microsecond
	// handAfter is how long ready tasks left for busy workers wait before the run loop hands them off.
	handAfter = time.Millisecond
)

func newExecutor[C any](c *compiled[C], world C, opts Options) *executor[C] {
	n := len(c.depStart) - 1
	ex := &executor[C]{
		c:          c,
		world:      world,
		opts:       opts,
		state:      make([]taskState, n),
		pending:    make([]int32, n),
		attempts:   make([]uint32, n),
		began:      time.Now(),
		started:    make([]time.Duration, n),
		firsts:     make([]attempt, n),
		errs:       make([]*TaskError, n),
		classIdx:   make([]int32, n),
		work:       make(chan job, opts.Concurrency),
		wake:       make(chan struct{}, 1),
		retries:    make(chan int32),
		pushbacks:  make(chan pushback, 16),
		quit:       make(chan struct{}),
		tokenTimer: time.NewTimer(time.Hour),
		handTimer:  time.NewTimer(time.Hour),
		procs:      runtime.GOMAXPROCS(0),
		short:      shortAttempt,
		handAfter:  handAfter,
	}
	ex.tokenTimer.Stop()
	ex.handTimer.Stop()
	ex.shared = &runShared{logger: opts.Logger, pushed: ex.pushbacks, stopped: ex.quit}
	index := map[string]int32{}
	last, ci := "", int32(-1)
	for i, nd := range c.g.nodes {
		if ci >= 0 && nd.class == last {
			ex.classIdx[i] = ci // most graphs add the tasks of one class together
			continue
		}
		var ok bool
		if ci, ok = index[nd.class]; !ok {
			limit := opts.ClassLimits[nd.class]
			if limit <= 0 || limit > opts.Concurrency {
				limit = opts.Concurrency
			}
			ci = int32(len(ex.classes))
			index[nd.class] = ci
			ex.classes = append(ex.classes, newClassState(limit, &opts))
		}
		ex.classIdx[i], last = ci, nd.class
	}
	for i := 0; i < n; i++ {
		ex.classes[ex.classIdx[i]].tasks++
	}
	for _, cs := range ex.classes {
		cs.ready = make([]int32, 0, cs.tasks)
	}
	for i := 0; i < n; i++ {
		ex.pending[i] = c.depStart[i+1] - c.depStart[i]
		if ex.pending[i] == 0 {
			ex.push(int32(i))
		}
	}
	return ex
}

func (ex *executor[C]) run(ctx context.Context) (*Result, error) {
	workerCtx, cancelWorkers := context.WithCancel(ctx)
	defer cancelWorkers()
	ex.ctx, ex.workerCtx = ctx, workerCtx
	defer close(ex.work)
	defer ex.tokenTimer.Stop()
	defer ex.handTimer.Stop()

	var tick <-chan time.Time
	if ex.opts.Progress != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	ctxDone := ctx.Done()
	var out handoff
	ex.probe(&out)
	ex.mu.Lock()
	for {
		if !ex.cancelled {
			ex.dispatch(false, &out, false)
		}
		if ex.running == 0 && (ex.cancelled || ex.retrying == 0 && !ex.tokenArmed) {
			break
		}
		ex.mu.Unlock()
		ex.handOff(&out)
		select {
		case <-ex.wake:
			ex.mu.Lock()
		case i := <-ex.retries:
			ex.mu.Lock()
			ex.retrying--
			delete(ex.timers, i)
			ex.push(i)
		case p := <-ex.pushbacks:
			ex.mu.Lock()
			ex.classes[p.class].pushedBack(p.epoch, false, time.Time{})
		case <-ex.tokenTimer.C:
			ex.mu.Lock()
			ex.tokenArmed = false
		case <-ex.handTimer.C:
			ex.mu.Lock()
			ex.handArmed, ex.leave = false, false
		case <-tick:
			ex.mu.Lock()
			ex.progress()
		case <-ctxDone:
			// Stop scheduling; the running tasks see the cancelled context and return promptly.
			ex.mu.Lock()
			ex.cancelled, ctxDone = true, nil
			ex.stopRetries()
			ex.tokenTimer.Stop()
			ex.tokenArmed = false
		}
	}
	ex.mu.Unlock()
	close(ex.quit)
	if ex.opts.Progress != nil {
		ex.progress()
	}
	return ex.result(ctx)
}

// probe starts the first tasks. Nothing says yet whether they are work for the CPU (a graph of local files) or
// waits (calls to an API): it starts as many as the machine has processors, leaves the others ready, and waits
// up to short for one of them to finish. If one does, the tasks are short: the workers that run them go on with
// the others, as after any short attempt (see dispatch), and the hand-off timer hands off what they leave. A
// hundred short tasks so cost a few goroutines, not a hundred, each growing its stack, woken and ended. If none
// does, the tasks wait: the rest are handed off at once, as the window allows, and a layer of slow calls starts
// after short, not after handAfter (a timer below a millisecond fires a millisecond late on an idle machine: it
// spins, yielding, instead). short is counted from when a worker began the first attempt, not from the hand-off:
// on a loaded machine the worker may start late.
func (ex *executor[C]) probe(out *handoff) {
	ex.mu.Lock()
	ex.leave = true
	if !ex.cancelled {
		ex.dispatch(false, out, false)
	}
	left := ex.handArmed // ready tasks were left
	ex.leave = left
	ex.mu.Unlock()
	ex.handOff(out)
	if !left {
		return
	}
	probed := time.Since(ex.began)
	for !ex.firstShort.Load() {
		now := time.Since(ex.began)
		b := ex.firstBegan.Load()
		if b > 0 && now-time.Duration(b-1) >= ex.short || b == 0 && now-probed >= ex.handAfter {
			// An attempt has run for short (or no worker began one in handAfter, on a loaded machine): the
			// tasks wait.
			ex.mu.Lock()
			ex.leave = false
			ex.mu.Unlock()
			return
		}
		runtime.Gosched() // on one processor: let the worker run
	}
}

// handoff is what a dispatch started for other goroutines: the jobs for the workers, and how many workers to
// start for them. It is handed off (handOff) after the lock is released, so that the lock is not held while
// goroutines are started and woken: on a graph of short tasks every worker wants the lock once per task.
type handoff struct {
	jobs  []job
	spawn int
}

// handOff sends out's jobs to the workers, starting the workers dispatch counted for them, and empties out.
// It is called without the lock: the work channel has room for every running task, so a send never blocks.
func (ex *executor[C]) handOff(out *handoff) {
	for ; out.spawn > 0; out.spawn-- {
		go ex.worker(ex.workerCtx)
	}
	for _, j := range out.jobs {
		ex.work <- j
	}
	out.jobs = out.jobs[:0]
}

// dispatch starts ready tasks while there is room: each class's, in order, while its window, its rate and the
// global limit allow. When a class's tasks wait for a token only, the token timer is armed for it. With keep,
// the first task started is returned for the caller (a worker) to run itself; the others go to out, for the
// caller to hand off once it released the lock.
//
// With short (the caller's attempt took less than shortAttempt: its tasks are work for the CPU, not waits), a
// worker that has its next task hands off others only while fewer tasks run than the machine has processors
// (GOMAXPROCS): more goroutines would only take turns on them, and waking one costs more than a short task.
// The rest stay ready for the workers to take as they finish, and the hand-off timer makes the run loop hand
// them off after handAfter if they are still waiting then (the task kept turned out to be a long one). The run
// loop (not keep) does the same while leave holds (see probe).
func (ex *executor[C]) dispatch(keep bool, out *handoff, short bool) (kept job, ok bool) {
	var now time.Time
	var wait time.Duration
	for _, cs := range ex.classes {
		for cs.head < len(cs.ready) && cs.running < cs.window && ex.running < ex.opts.Concurrency {
			if (ok && short || !keep && ex.leave) && ex.running >= ex.procs {
				ex.armHand()
				break
			}
			if cs.rate > 0 {
				if now.IsZero() {
					now = time.Now()
				}
				ok, w := cs.mayStart(now)
				if !ok {
					if wait == 0 || w < wait {
						wait = w
					}
					break
				}
			}
			i := cs.ready[cs.head]
			cs.head++
			self := keep && !ok
			j := ex.start(i, cs, self, out)
			if self {
				kept, ok = j, true
				continue
			}
			out.jobs = append(out.jobs, j)
		}
		if cs.head == len(cs.ready) {
			cs.ready, cs.head = cs.ready[:0], 0
		}
	}
	if wait > 0 {
		ex.armTokens(now.Add(wait))
	}
	return kept, ok
}

// armHand makes the run loop hand off, in handAfter, what the workers have not taken by then.
func (ex *executor[C]) armHand() {
	if !ex.handArmed {
		ex.handTimer.Reset(ex.handAfter)
		ex.handArmed = true
	}
}

// armTokens makes the run loop wake up at due, or earlier if it is armed for earlier.
func (ex *executor[C]) armTokens(due time.Time) {
	if ex.tokenArmed && !due.Before(ex.tokenDue) {
		return
	}
	ex.tokenTimer.Reset(time.Until(due))
	ex.tokenDue, ex.tokenArmed = due, true
}

// start marks task i running in class cs and returns its job. Unless the caller runs it itself (self), a worker
// must be there to take it: workers are started as they are needed (counted in out), as many as the most tasks
// that ran at once.
func (ex *executor[C]) start(i int32, cs *classState, self bool, out *handoff) job {
	j := job{i: i, epoch: cs.epoch}
	cs.running++
	if !self && ex.running == ex.workers {
		ex.workers++
		out.spawn++
	}
	ex.state[i] = running
	ex.running++
	if ex.attempts[i] == 0 {
		ex.started[i] = time.Since(ex.began)
		if cs.began.IsZero() {
			cs.began = ex.began.Add(ex.started[i])
		}
	}
	ex.attempts[i]++
	j.attempt = ex.attempts[i]
	return j
}

// push queues a ready task behind the others of its class.
func (ex *executor[C]) push(i int32) {
	cs := ex.classOf(i)
	cs.ready = append(cs.ready, i)
}

func (ex *executor[C]) classOf(i int32) *classState { return ex.classes[ex.classIdx[i]] }

// worker runs the jobs it receives, and after each attempt records its outcome and goes on with a task that
// outcome made ready, if any.
func (ex *executor[C]) worker(ctx context.Context) {
	var buf [8]job
	out := handoff{jobs: buf[:0]}
	for j := range ex.work {
		if ex.firstBegan.Load() == 0 {
			ex.firstBegan.CompareAndSwap(0, int64(time.Since(ex.began))+1)
		}
		for ok := true; ok; {
			change, err := ex.syncOne(ctx, j)
			// How long the attempt took (from the task's first, for a retry: never short then).
			short := time.Since(ex.began)-ex.started[j.i] < ex.short
			if short && !ex.firstShort.Load() {
				ex.firstShort.Store(true)
			}
			interrupted := ex.ctx.Err() != nil
			ex.mu.Lock()
			ex.finish(outcome{job: j, change: change, err: err}, interrupted)
			ok = false
			if !ex.cancelled {
				j, ok = ex.dispatch(true, &out, short)
			}
			idle := ex.running == 0
			ex.mu.Unlock()
			ex.handOff(&out)
			if idle {
				select {
				case ex.wake <- struct{}{}:
				default: // the run loop has a wake-up pending already
				}
			}
		}
	}
}

// syncOne runs one attempt of a task with its lifecycle, turning a panic into a terminal error.
func (ex *executor[C]) syncOne(ctx context.Context, j job) (change *Change, err error) {
	i := j.i
	nd := ex.c.g.nodes[i]
	lc := ex.c.lifecycles[i]
	if lc == Ignore {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			change, err = nil, Terminal(fmt.Errorf("panic: %v", r))
		}
	}()
	tctx := &ex.firsts[i] // written once: a task has one first attempt
	if j.attempt > 1 {
		tctx = new(attempt) // a former attempt's may still be held (by a call it started)
	}
	*tctx = attempt{Context: ctx, run: ex.shared, key: nd.task, class: ex.classIdx[i], epoch: j.epoch}
	change, err = nd.runner.sync(tctx, ex.world, ex.opts.Target, lc)
	if err != nil && lc == WarnIfInsufficientAccess && errors.Is(err, ErrAccessDenied) {
		Logger(tctx).Warn("insufficient access; continuing (lifecycle WarnIfInsufficientAccess)", "error", err)
		return nil, nil
	}
	return change, err
}

// finish records the outcome of one attempt: done, retry later, or failed (and its dependents skipped).
func (ex *executor[C]) finish(o outcome, interrupted bool) {
	i := o.i
	ex.running--
	cs := ex.classOf(i)
	cs.running--
	if o.err == nil {
		cs.succeeded()
		ex.state[i] = finished
		ex.done++
		if o.change != nil {
			ex.changes = append(ex.changes, *o.change)
		}
		for _, d := range ex.c.dependents(i) {
			ex.pending[d]--
			if ex.pending[d] == 0 && ex.state[d] == waiting {
				ex.push(d)
			}
		}
		return
	}
	class := ClassOf(o.err)
	if class == ClassRetryable {
		cs.pushedBack(o.epoch, true, time.Now())
	}
	if interrupted && (errors.Is(o.err, context.Canceled) || errors.Is(o.err, context.DeadlineExceeded)) {
		// Interrupted, not failed, with the task's own error, which says what it was doing ("waiting for the
		// pool lock held by ...: context canceled"). Before Render: reported as not run. In Render: the change
		// may be partly made, and the report must not say the task did not run.
		var re *renderError
		if errors.As(o.err, &re) {
			ex.state[i] = cutShort
			ex.errs[i] = &TaskError{Key: ex.c.key(i), Err: o.err, Interrupted: true}
			return
		}
		ex.state[i] = waiting
		ex.errs[i] = &TaskError{Key: ex.c.key(i), Err: o.err, Skipped: true}
		return
	}
	if class != ClassTerminal {
		if delay, ok := ex.retryDelay(i); ok {
			ex.state[i] = waiting
			if class == ClassRetryable && ex.attempts[i] == 1 && cs.rate > 0 {
				// Its class's bucket, which this failure has just slowed, paces it: the first retry waits
				// for a token, not for the backoff (an API's rate wasted while throttled tasks wait out a
				// second). Later retries back off.
				ex.opts.Logger.Debug("retrying", "task", ex.c.key(i).String(), "attempt", ex.attempts[i],
					"delay", "a token of its class", "class", class.String(), "error", o.err)
				ex.push(i)
				return
			}
			ex.scheduleRetry(i, delay, o.err)
			return
		}
		o.err = fmt.Errorf("gave up after %d attempts over %s: %w", ex.attempts[i],
			ex.since(i).Round(time.Millisecond), o.err)
	}
	ex.fail(i, o.err)
}

// retryDelay is exponential backoff with jitter; ok is false once the task's deadline would be passed.
func (ex *executor[C]) retryDelay(i int32) (time.Duration, bool) {
	deadline := ex.opts.Deadline
	if d := ex.c.g.nodes[i].deadline; d > 0 {
		deadline = d
	}
	delay := ex.opts.Backoff
	for a := uint32(1); a < ex.attempts[i] && delay < ex.opts.MaxBackoff; a++ {
		delay *= 2
	}
	delay = min(delay, ex.opts.MaxBackoff)
	delay = delay/2 + rand.N(delay/2+1) // jitter: between half and all of it
	if ex.since(i)+delay > deadline {
		return 0, false
	}
	return delay, true
}

func (ex *executor[C]) scheduleRetry(i int32, delay time.Duration, err error) {
	ex.retrying++
	ex.opts.Logger.Debug("retrying", "task", ex.c.key(i).String(), "attempt", ex.attempts[i],
		"delay", delay, "class", ClassOf(err).String(), "error", err)
	if ex.timers == nil {
		ex.timers = map[int32]*time.Timer{}
	}
	ex.timers[i] = time.AfterFunc(delay, func() {
		select {
		case ex.retries <- i:
		case <-ex.quit:
		}
	})
}

// since is how long ago task i's first attempt started.
func (ex *executor[C]) since(i int32) time.Duration { return time.Since(ex.began) - ex.started[i] }

// stopRetries abandons the tasks waiting to be retried: they are reported as not run.
func (ex *executor[C]) stopRetries() {
	for i, t := range ex.timers {
		if t.Stop() {
			ex.retrying--
			delete(ex.timers, i)
		}
	}
}

// fail marks task i failed and every task that depends on it, directly or not, skipped.
func (ex *executor[C]) fail(i int32, err error) {
	ex.state[i] = failed
	ex.errs[i] = &TaskError{Key: ex.c.key(i), Err: err}
	cause := fmt.Errorf("dependency %s failed", ex.c.key(i))
	stack := []int32{i}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range ex.c.dependents(u) {
			if ex.state[d] == waiting {
				ex.state[d] = skipped
				ex.errs[d] = &TaskError{Key: ex.c.key(d), Err: cause, Skipped: true}
				stack = append(stack, d)
			}
		}
	}
}

func (ex *executor[C]) progress() {
	fmt.Fprintf(ex.opts.Progress, "Tasks: %d done / %d total; %d running\n", ex.done, len(ex.state), ex.running)
}

func (ex *executor[C]) result(ctx context.Context) (*Result, error) {
	res := &Result{Plan: newPlan(ex.changes), Done: ex.done}
	var runErr RunError
	for i, st := range ex.state {
		if st != finished {
			res.Plan.Incomplete = append(res.Plan.Incomplete, ex.c.key(int32(i)))
		}
		switch st {
		case failed:
			runErr.Failed = append(runErr.Failed, ex.errs[i])
		case skipped:
			runErr.Skipped = append(runErr.Skipped, ex.errs[i])
		case cutShort:
			runErr.Interrupted = append(runErr.Interrupted, ex.errs[i])
		case waiting, running:
			if ex.errs[i] != nil {
				runErr.Skipped = append(runErr.Skipped, ex.errs[i])
				continue
			}
			cause := context.Cause(ctx)
			if cause == nil {
				cause = errors.New("not run")
			}
			runErr.Skipped = append(runErr.Skipped, &TaskError{Key: ex.c.key(int32(i)), Err: cause, Skipped: true})
		}
	}
	if len(runErr.Failed) == 0 && len(runErr.Interrupted) == 0 && len(runErr.Skipped) == 0 {
		return res, nil
	}
	sortTaskErrors(runErr.Failed)
	sortTaskErrors(runErr.Interrupted)
	sortTaskErrors(runErr.Skipped)
	inc := res.Plan.Incomplete
	sort.Slice(inc, func(i, j int) bool { return keyLess(inc[i], inc[j]) })
	return res, &runErr
}
