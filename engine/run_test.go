package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
)

// guard bounds a test that would hang if the engine were wrong. It is a safety net, never a speed assertion.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func fastRetry(o engine.Options) engine.Options {
	o.Backoff, o.MaxBackoff = time.Microsecond, time.Millisecond
	return o
}

// A task starts as soon as its own dependencies are done, not when a whole "wave" is: here c, which depends
// only on b, must run while a (independent, in the first wave) is still busy. It is a is released by c.
func TestReadyQueueNotWaves(t *testing.T) {
	world := newWorld()
	releaseA := make(chan struct{})
	world.findHook["a"] = func(ctx context.Context, _ int) error {
		select {
		case <-releaseA:
			return nil
		case <-ctx.Done():
			return errors.New("a was never released: c did not start while a was running")
		}
	}
	world.findHook["c"] = func(context.Context, int) error { close(releaseA); return nil }
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "a"})
	b := engine.Add(g, &Item{Name: "b"})
	engine.Add(g, &Item{Name: "c", Parent: b})
	if _, err := engine.Run(guard(t), g, world, engine.Options{}); err != nil {
		t.Fatal(err)
	}
}

// concurrency counts how many Finds run at once, per group.
type concurrency struct {
	mu       sync.Mutex
	now, max map[string]int
}

// barrier releases its waiters once n have arrived, or when their context ends.
type barrier struct {
	mu      sync.Mutex
	n       int
	reached chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, reached: make(chan struct{})} }

func (b *barrier) arrive(ctx context.Context) error {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.reached)
	}
	b.mu.Unlock()
	select {
	case <-b.reached:
		return nil
	case <-ctx.Done():
		return errors.New("barrier never reached: the engine ran fewer tasks at once than expected")
	}
}

func (c *concurrency) hook(group string, b *barrier) func(context.Context, int) error {
	return func(ctx context.Context, _ int) error {
		c.mu.Lock()
		for _, g := range []string{group, "*"} {
			c.now[g]++
			c.max[g] = max(c.max[g], c.now[g])
		}
		c.mu.Unlock()
		var err error
		if b != nil {
			err = b.arrive(ctx) // the first tasks of the group wait for each other: the limit is reached, not just respected
		}
		time.Sleep(100 * time.Microsecond) // give an over-eager scheduler the chance to start one more
		c.mu.Lock()
		c.now[group]--
		c.now["*"]--
		c.mu.Unlock()
		return err
	}
}

func TestConcurrencyLimits(t *testing.T) {
	world := newWorld()
	c := &concurrency{now: map[string]int{}, max: map[string]int{}}
	g := engine.NewGraph[*World]()
	// Two ec2 tasks and four others wait for each other: all six must run at once, which takes the whole global
	// limit and the whole ec2 limit. (Two barriers, one per group, let one group finish before the other was
	// all running: a flaky test.)
	six := newBarrier(6)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("ec2-%02d", i)
		var b *barrier
		if i < 2 {
			b = six
		}
		world.findHook[name] = c.hook("ec2", b)
		engine.Add(g, &Item{Name: name, Class: "ec2"})
	}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("other-%02d", i)
		var b *barrier
		if i < 4 {
			b = six
		}
		world.findHook[name] = c.hook("other", b)
		engine.Add(g, &Item{Name: name})
	}
	_, err := engine.Run(guard(t), g, world, engine.Options{Concurrency: 6, ClassLimits: map[string]int{"ec2": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if c.max["ec2"] != 2 {
		t.Errorf("at most %d ec2 tasks ran at once, want exactly the class limit 2", c.max["ec2"])
	}
	if c.max["*"] != 6 {
		t.Errorf("%d tasks ran at once, want exactly the global limit 6", c.max["*"])
	}
}

// TestSlowStart: a class's window starts at InitialWindow and grows by one per success. Forty tasks that wait
// for each other can only finish if forty run at once: after the thirty quick tasks before them succeeded, the
// window is 10+30.
func TestSlowStart(t *testing.T) {
	world := newWorld()
	c := &concurrency{now: map[string]int{}, max: map[string]int{}}
	forty := newBarrier(40)
	g := engine.NewGraph[*World]()
	for i := 0; i < 70; i++ {
		name := fmt.Sprintf("t%02d", i)
		var b *barrier
		if i >= 30 {
			b = forty
		}
		world.findHook[name] = c.hook("all", b)
		engine.Add(g, &Item{Name: name})
	}
	if _, err := engine.Run(guard(t), g, world, engine.Options{InitialWindow: 10}); err != nil {
		t.Fatal(err)
	}
	if c.max["all"] < 40 {
		t.Errorf("%d tasks ran at once, want at least 40", c.max["all"])
	}
}

// TestFixedConcurrency: with FixedConcurrency, the window is the cap from the start.
func TestFixedConcurrency(t *testing.T) {
	world := newWorld()
	c := &concurrency{now: map[string]int{}, max: map[string]int{}}
	all := newBarrier(64)
	g := engine.NewGraph[*World]()
	for i := 0; i < 64; i++ {
		name := fmt.Sprintf("t%02d", i)
		world.findHook[name] = c.hook("all", all)
		engine.Add(g, &Item{Name: name, Class: "ec2"})
	}
	if _, err := engine.Run(guard(t), g, world, engine.Options{Concurrency: 64, FixedConcurrency: true}); err != nil {
		t.Fatal(err)
	}
	if c.max["all"] != 64 {
		t.Errorf("%d tasks ran at once, want 64", c.max["all"])
	}
}

// TestPushback: a task whose API client retried a throttled call by itself tells the engine with Pushback; the
// run goes on. Outside a task, and after its run, Pushback does nothing and never blocks.
func TestPushback(t *testing.T) {
	world := newWorld()
	var mu sync.Mutex
	var kept []context.Context
	g := engine.NewGraph[*World]()
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("t%02d", i)
		world.findHook[name] = func(ctx context.Context, _ int) error {
			engine.Pushback(ctx)
			mu.Lock()
			kept = append(kept, ctx)
			mu.Unlock()
			return nil
		}
		engine.Add(g, &Item{Name: name, Class: "ec2"})
	}
	if _, err := engine.Run(guard(t), g, world, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	engine.Pushback(context.Background())
	for _, ctx := range kept {
		engine.Pushback(ctx)
	}
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name         string
		fail         func(attempt int) error
		deadline     time.Duration
		wantAttempts int
		wantErr      string // "" for success
	}{
		{
			name: "not-ready is retried until it succeeds",
			fail: func(attempt int) error {
				if attempt < 4 {
					return engine.NotReady(errors.New("volume still attaching"))
				}
				return nil
			},
			wantAttempts: 4,
		},
		{
			name: "retryable is retried until it succeeds",
			fail: func(attempt int) error {
				if attempt < 3 {
					return engine.Retryable(errors.New("throttled"))
				}
				return nil
			},
			wantAttempts: 3,
		},
		{
			name:         "an unclassified error is terminal: one attempt",
			fail:         func(int) error { return errors.New("invalid parameter") },
			wantAttempts: 1,
			wantErr:      "Item/x: finding: invalid parameter",
		},
		{
			name:         "terminal wins over a wrapped not-ready",
			fail:         func(int) error { return engine.Terminal(engine.NotReady(errors.New("bad"))) },
			wantAttempts: 1,
			wantErr:      "Item/x: finding: bad",
		},
		{
			name:     "not-ready gives up at the deadline",
			fail:     func(int) error { return engine.NotReady(errors.New("never ready")) },
			deadline: 20 * time.Millisecond,
			wantErr:  "Item/x: gave up after",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			world := newWorld()
			world.findHook["x"] = func(_ context.Context, attempt int) error { return tt.fail(attempt) }
			g := engine.NewGraph[*World]()
			engine.Add(g, &Item{Name: "x"})
			_, err := engine.Run(guard(t), g, world, fastRetry(engine.Options{Target: engine.DryRun, Deadline: tt.deadline}))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			attempts := world.count(world.finds, "x")
			if tt.wantAttempts > 0 && attempts != tt.wantAttempts {
				t.Errorf("%d attempts, want %d", attempts, tt.wantAttempts)
			}
			if tt.deadline > 0 && attempts < 2 {
				t.Errorf("%d attempts before giving up, want several", attempts)
			}
		})
	}
}

// A failure skips the failed task's dependents, and only them; the error lists every failure and skip.
func TestFailureSkipsOnlyDependents(t *testing.T) {
	world := newWorld()
	world.findHook["a"] = func(context.Context, int) error { return errors.New("boom") }
	world.findHook["p"] = func(context.Context, int) error { return errors.New("bang") }
	g := engine.NewGraph[*World]()
	a := engine.Add(g, &Item{Name: "a"})
	b := engine.Add(g, &Item{Name: "b", Parent: a})
	engine.Add(g, &Item{Name: "c", Parent: b})
	d := engine.Add(g, &Item{Name: "d"})
	engine.Add(g, &Item{Name: "e", Parent: d})
	p := engine.Add(g, &Item{Name: "p"})
	engine.Add(g, &Item{Name: "q", Needs: []*Item{p, d}})

	res, err := engine.Run(guard(t), g, world, engine.Options{Target: engine.Apply})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) {
		t.Fatalf("err = %v, want a *RunError", err)
	}
	want := `2 task(s) failed, 3 skipped:
  Item/a: finding: boom
  Item/p: finding: bang
  Item/b: skipped: dependency Item/a failed
  Item/c: skipped: dependency Item/a failed
  Item/q: skipped: dependency Item/p failed`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	for _, name := range []string{"d", "e"} {
		if _, ok := world.items[name]; !ok {
			t.Errorf("independent task %s was not applied", name)
		}
	}
	for _, name := range []string{"b", "c", "q"} {
		if n := world.count(world.finds, name); n != 0 {
			t.Errorf("skipped task %s was run", name)
		}
	}
	if res.Done != 2 {
		t.Errorf("Done = %d, want 2 (d and e)", res.Done)
	}
}

// Cancelling the context stops scheduling: running tasks are interrupted, nothing new starts, and Run returns
// with the unfinished tasks reported as not run.
func TestCancellation(t *testing.T) {
	world := newWorld()
	ctx, cancel := context.WithCancel(guard(t))
	started := make(chan struct{})
	var once sync.Once
	g := engine.NewGraph[*World]()
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("slow-%d", i)
		world.findHook[name] = func(ctx context.Context, _ int) error {
			once.Do(func() { close(started) })
			<-ctx.Done() // a well-behaved task returns when its context is cancelled
			return ctx.Err()
		}
		prev := engine.Add(g, &Item{Name: name})
		engine.Add(g, &Item{Name: name + "-after", Parent: prev})
	}
	go func() { <-started; cancel() }()
	_, err := engine.Run(ctx, g, world, engine.Options{Concurrency: 2})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) {
		t.Fatalf("err = %v, want a *RunError", err)
	}
	if len(runErr.Failed) != 0 || len(runErr.Skipped) != 10 {
		t.Errorf("failed %d, skipped %d; want 0 failed and all 10 reported as not run:\n%v", len(runErr.Failed), len(runErr.Skipped), err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err does not wrap context.Canceled: %v", err)
	}
	for i := 0; i < 5; i++ {
		if n := world.count(world.finds, fmt.Sprintf("slow-%d-after", i)); n != 0 {
			t.Errorf("slow-%d-after started after the cancellation", i)
		}
	}
	if n := world.total(world.finds); n > 2 {
		t.Errorf("%d tasks started, want at most the 2 running when the context was cancelled", n)
	}
}

// A task interrupted by the cancellation is reported with its own error, which says what it was waiting for,
// not a bare "context canceled".
func TestInterruptedTaskKeepsItsError(t *testing.T) {
	world := newWorld()
	ctx, cancel := context.WithCancel(guard(t))
	world.findHook["x"] = func(ctx context.Context, _ int) error {
		cancel()
		<-ctx.Done()
		return fmt.Errorf("waiting for the pool lock held by pid 42: %w", ctx.Err())
	}
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "x"})
	_, err := engine.Run(ctx, g, world, engine.Options{})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || len(runErr.Skipped) != 1 {
		t.Fatalf("err = %v, want x reported as not run", err)
	}
	if got := runErr.Skipped[0].Err.Error(); got != "finding: waiting for the pool lock held by pid 42: context canceled" {
		t.Errorf("x's cause = %q, want the task's own error", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err does not wrap context.Canceled: %v", err)
	}
}

// A task whose Render was running when the run was cancelled may have made part of its change (an API call
// sent, its operation not waited for): it is reported as interrupted, never as skipped, which says it did not
// run. A task cancelled while it read the world, and one that never started, are skipped; one that finished is
// done.
func TestCancelledRenderIsInterruptedNotSkipped(t *testing.T) {
	world := newWorld()
	ctx, cancel := context.WithCancel(guard(t))
	world.renderHook["b"] = func(ctx context.Context) error {
		world.mu.Lock()
		world.items["b"] = Item{Name: "b"} // the create was sent
		world.mu.Unlock()
		cancel() // Ctrl-C while it waits for the operation
		<-ctx.Done()
		return fmt.Errorf("waiting for the operation that creates b: %w", ctx.Err())
	}
	world.findHook["d"] = func(ctx context.Context, _ int) error {
		<-ctx.Done()
		return ctx.Err()
	}
	g := engine.NewGraph[*World]()
	a := engine.Add(g, &Item{Name: "a"})
	b := engine.Add(g, &Item{Name: "b", Parent: a})
	engine.Add(g, &Item{Name: "c", Parent: b})
	engine.Add(g, &Item{Name: "d"})
	res, err := engine.Run(ctx, g, world, engine.Options{Target: engine.Apply})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) {
		t.Fatalf("err = %v, want a *RunError", err)
	}
	keys := func(l []*engine.TaskError) []string {
		var out []string
		for _, te := range l {
			out = append(out, te.Key.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"b"}, keys(runErr.Interrupted)); diff != "" {
		t.Errorf("interrupted (-want +got):\n%s\n%v", diff, err)
	}
	if diff := cmp.Diff([]string{"c", "d"}, keys(runErr.Skipped)); diff != "" {
		t.Errorf("skipped (-want +got):\n%s\n%v", diff, err)
	}
	if len(runErr.Failed) != 0 || res == nil || res.Done != 1 {
		t.Errorf("failed %v, result %+v; want none failed and a done", runErr.Failed, res)
	}
	want := "Item/b: interrupted while making its change, which may be partly made (run again to finish it): rendering: waiting for the operation that creates b: context canceled"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error:\n%v\nwant it to say:\n%s", err, want)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err does not wrap context.Canceled: %v", err)
	}
}

// Retries waiting for their backoff are abandoned on cancellation.
func TestCancellationDuringBackoff(t *testing.T) {
	world := newWorld()
	ctx, cancel := context.WithCancel(guard(t))
	world.findHook["x"] = func(context.Context, int) error {
		cancel()
		return engine.NotReady(errors.New("not yet"))
	}
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "x"})
	_, err := engine.Run(ctx, g, world, engine.Options{Backoff: time.Hour, MaxBackoff: time.Hour, Deadline: 2 * time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the task reported as not run because of the cancellation", err)
	}
}

func TestPanicIsATerminalError(t *testing.T) {
	world := newWorld()
	world.findHook["x"] = func(context.Context, int) error { panic("nil map") }
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "x"})
	engine.Add(g, &Item{Name: "y"})
	_, err := engine.Run(guard(t), g, world, engine.Options{Target: engine.Apply})
	if err == nil || !contains(err.Error(), "Item/x: panic: nil map") {
		t.Fatalf("err = %v, want the panic reported as the task's error", err)
	}
	if _, ok := world.items["y"]; !ok {
		t.Error("an independent task did not run after another panicked")
	}
}

func TestLifecycles(t *testing.T) {
	stored := Item{Name: "x", Size: ptr(1), Order: []string{}}
	denied := func(context.Context, int) error {
		return fmt.Errorf("DescribeVolumes: %w", engine.ErrAccessDenied)
	}
	tests := []struct {
		name        string
		lifecycle   engine.Lifecycle
		override    bool // set through Graph.SetLifecycle rather than WithLifecycle
		world       []Item
		expected    Item
		findHook    func(context.Context, int) error
		wantErr     string
		wantFinds   int
		wantRenders int
		wantWarning string
	}{
		{name: "Sync renders", lifecycle: engine.Sync, world: []Item{stored}, expected: Item{Name: "x", Size: ptr(2), Order: []string{}}, wantFinds: 1, wantRenders: 1},
		{name: "Ignore neither finds nor renders", lifecycle: engine.Ignore, expected: Item{Name: "x", Size: ptr(2)}},
		{name: "type override wins over the task's own", lifecycle: engine.Ignore, override: true, expected: Item{Name: "x", Size: ptr(2)}},
		{name: "Sync with access denied fails", lifecycle: engine.Sync, expected: Item{Name: "x"}, findHook: denied, wantErr: "access denied", wantFinds: 1},
		{name: "WarnIfInsufficientAccess turns access denied into a warning", lifecycle: engine.WarnIfInsufficientAccess, expected: Item{Name: "x"}, findHook: denied, wantFinds: 1, wantWarning: "insufficient access"},
		{name: "WarnIfInsufficientAccess otherwise syncs", lifecycle: engine.WarnIfInsufficientAccess, expected: Item{Name: "x", Size: ptr(3)}, wantFinds: 1, wantRenders: 1},
		{name: "ExistsAndValidates: missing is an error", lifecycle: engine.ExistsAndValidates, expected: Item{Name: "x"}, wantErr: "lifecycle ExistsAndValidates: does not exist", wantFinds: 1},
		{name: "ExistsAndValidates: a difference is an error", lifecycle: engine.ExistsAndValidates, world: []Item{stored}, expected: Item{Name: "x", Size: ptr(2), Contents: ptr("c"), Order: []string{}}, wantErr: "lifecycle ExistsAndValidates: differs from the world in Size, Contents (Size: 1 in the world, 2 wanted; Contents: <none> in the world, c wanted)", wantFinds: 1},
		{name: "ExistsAndValidates: a match passes", lifecycle: engine.ExistsAndValidates, world: []Item{stored}, expected: Item{Name: "x", Size: ptr(1), Order: []string{}}, wantFinds: 1},
		{name: "ExistsAndWarnIfChanges: a difference is a warning", lifecycle: engine.ExistsAndWarnIfChanges, world: []Item{stored}, expected: Item{Name: "x", Size: ptr(2), Order: []string{}}, wantFinds: 1, wantWarning: "fields=Size"},
		{name: "ExistsAndWarnIfChanges: an impossible change is only a warning", lifecycle: engine.ExistsAndWarnIfChanges, world: []Item{stored}, expected: Item{Name: "x", Size: ptr(0), Order: []string{}}, wantFinds: 1, wantWarning: "fields=Size"},
		{name: "ExistsAndWarnIfChanges: missing is an error", lifecycle: engine.ExistsAndWarnIfChanges, expected: Item{Name: "x"}, wantErr: "does not exist", wantFinds: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			world := newWorld(tt.world...)
			if tt.findHook != nil {
				world.findHook["x"] = tt.findHook
			}
			g := engine.NewGraph[*World]()
			expected := tt.expected
			if tt.override {
				engine.Add(g, &expected, engine.WithLifecycle(engine.Sync))
				g.SetLifecycle("Item", tt.lifecycle)
			} else {
				engine.Add(g, &expected, engine.WithLifecycle(tt.lifecycle))
			}
			engine.Add(g, &Item{Name: "dependent", Parent: &expected})
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			_, err := engine.Run(guard(t), g, world, engine.Options{Target: engine.Apply, Logger: logger})
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if tt.wantErr == "" && !tt.override && world.count(world.renders, "dependent") != 1 {
				t.Error("the dependent did not run")
			}
			if n := world.count(world.finds, "x"); n != tt.wantFinds {
				t.Errorf("Find called %d times, want %d", n, tt.wantFinds)
			}
			if n := world.count(world.renders, "x"); n != tt.wantRenders {
				t.Errorf("Render called %d times, want %d", n, tt.wantRenders)
			}
			if tt.wantWarning != "" && !(contains(logs.String(), tt.wantWarning) && contains(logs.String(), "task=Item/x")) {
				t.Errorf("logs %q lack the warning %q with task=Item/x", logs.String(), tt.wantWarning)
			}
		})
	}
}

func TestTaskLoggerNamesTheTask(t *testing.T) {
	world := newWorld()
	world.findHook["x"] = func(ctx context.Context, _ int) error {
		engine.Logger(ctx).Info("looking", "zone", "a")
		return nil
	}
	var logs bytes.Buffer
	g := engine.NewGraph[*World]()
	engine.Add(g, &Item{Name: "x"})
	engine.Run(guard(t), g, world, engine.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !contains(logs.String(), `msg=looking task=Item/x zone=a`) {
		t.Errorf("log = %q, want the message with task=Item/x", logs.String())
	}
}

func TestProgress(t *testing.T) {
	world := newWorld()
	g := engine.NewGraph[*World]()
	for i := 0; i < 3; i++ {
		engine.Add(g, &Item{Name: fmt.Sprint(i)})
	}
	var progress bytes.Buffer
	if _, err := engine.Run(guard(t), g, world, engine.Options{Target: engine.Apply, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if got := progress.String(); got != "Tasks: 3 done / 3 total; 0 running\n" {
		t.Errorf("progress = %q, want one final line (the run takes less than the 1s cadence)", got)
	}
}

// The executor adapts a class's concurrency to the API: a burst of throttling errors cuts it (once, not once
// per error), and successes grow it back to the limit.
func TestRetryableSlowsTheClassThenRecovers(t *testing.T) {
	world := newWorld()
	c := &concurrency{now: map[string]int{}, max: map[string]int{}}
	g := engine.NewGraph[*World]()
	stage := func(prefix string, n int, b *barrier, after []*Item, throttle bool) []*Item {
		var added []*Item
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%02d", prefix, i)
			hook := c.hook(prefix, b)
			world.findHook[name] = func(ctx context.Context, attempt int) error {
				if err := hook(ctx, attempt); err != nil {
					return err
				}
				if throttle && attempt == 1 {
					return engine.Retryable(errors.New("RequestLimitExceeded"))
				}
				return nil
			}
			added = append(added, engine.Add(g, &Item{Name: name, Class: "ec2", Needs: after}))
		}
		return added
	}
	burst := stage("burst", 8, newBarrier(8), nil, true)
	slowed := stage("slowed", 16, nil, burst, false)
	recovering := stage("recovering", 60, nil, slowed, false)
	stage("recovered", 8, newBarrier(8), recovering, false)

	_, err := engine.Run(guard(t), g, world, fastRetry(engine.Options{ClassLimits: map[string]int{"ec2": 8}}))
	if err != nil {
		t.Fatal(err)
	}
	if c.max["burst"] != 8 {
		t.Fatalf("the burst ran %d at once, want 8", c.max["burst"])
	}
	if got := c.max["slowed"]; got >= 8 {
		t.Errorf("after a burst of throttling, %d ec2 tasks ran at once; want fewer than the limit 8", got)
	}
	if c.max["recovered"] != 8 {
		t.Errorf("after 76 successes, %d ec2 tasks ran at once, want the class back at its limit 8", c.max["recovered"])
	}
}

func TestFileError(t *testing.T) {
	perm := &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}
	busy := &fs.PathError{Op: "rename", Path: "/x", Err: syscall.EBUSY}
	other := &fs.PathError{Op: "open", Path: "/x", Err: syscall.EISDIR}
	if engine.FileError(nil) != nil {
		t.Error("FileError(nil) is not nil")
	}
	if err := engine.FileError(perm); !errors.Is(err, engine.ErrAccessDenied) || !errors.Is(err, syscall.EACCES) {
		t.Errorf("FileError(EACCES) = %v, want access denied wrapping it", err)
	}
	if err := engine.FileError(busy); engine.ClassOf(err) != engine.ClassRetryable || !errors.Is(err, syscall.EBUSY) {
		t.Errorf("FileError(EBUSY) = %v (%v), want retryable", err, engine.ClassOf(err))
	}
	if err := engine.FileError(other); err != error(other) {
		t.Errorf("FileError(EISDIR) = %v, want it as it is", err)
	}
}

// TestTasksWaitingForTokens: once a retryable failure gives a class a rate, ready tasks wait for its tokens while
// nothing runs and nothing waits to be retried; the run waits with them instead of ending with them not run.
func TestTasksWaitingForTokens(t *testing.T) {
	world := newWorld()
	g := engine.NewGraph[*World]()
	world.findHook["first"] = func(ctx context.Context, attempt int) error {
		if attempt == 1 {
			return engine.Retryable(errors.New("RequestLimitExceeded"))
		}
		return nil
	}
	first := engine.Add(g, &Item{Name: "first", Class: "ec2"})
	for i := 0; i < 5; i++ {
		engine.Add(g, &Item{Name: fmt.Sprintf("then-%d", i), Class: "ec2", Needs: []*Item{first}})
	}
	// A window of 40: the failure gives the class a rate of 20 starts a second, one token at a time.
	res, err := engine.Run(guard(t), g, world, fastRetry(engine.Options{InitialWindow: 40}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 6 {
		t.Fatalf("%d tasks done, want 6", res.Done)
	}
}

// TestFirstRetryWaitsForAToken: a task whose first attempt the API throttled is retried as soon as its class's
// token bucket (which the failure started) allows, not after the backoff; a second failure backs off.
func TestFirstRetryWaitsForAToken(t *testing.T) {
	world := newWorld()
	g := engine.NewGraph[*World]()
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("t%d", i)
		world.findHook[name] = func(ctx context.Context, attempt int) error {
			if attempt == 1 {
				return engine.Retryable(errors.New("RequestLimitExceeded"))
			}
			return nil
		}
		engine.Add(g, &Item{Name: name, Class: "ec2"})
	}
	// A backoff of an hour: the run ends within the test's guard only if no retry waits for it.
	opts := engine.Options{InitialWindow: 40, Backoff: time.Hour, MaxBackoff: time.Hour, Deadline: 2 * time.Hour}
	res, err := engine.Run(guard(t), g, world, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done != 3 {
		t.Fatalf("%d tasks done, want 3", res.Done)
	}
}
