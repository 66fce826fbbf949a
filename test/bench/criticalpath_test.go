package bench

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// The critical path of update --yes against a cloud whose every call takes L: no schedule, however concurrent,
// finishes before the longest chain of calls that must follow one another. A task's calls follow one another
// (a task is sequential), and a task starts after its dependencies finish; update --yes runs a dry run, then the
// apply, on a fresh graph. So the bound is
//
//	(the longest dependency path of the dry run's graph + that of the apply's) x L,
//
// where a path's length is the sum of the API calls of its tasks. The calls of each task are counted in a
// calibration run of the same update against a fake without latency: an SDK middleware attributes each call to
// the task whose context makes it (engine.Logger(ctx) carries the task's key). A call no task's context makes
// (a read shared by the run's tasks, made on its own context) is not on any path: the bound leaves it out, so it
// is a lower bound, and the benchmark's x-critical-path can only overstate how far the engine is from it. Which
// task makes a read that several share (the run's one DescribeX feeding every task's Find) is a race, so the bound
// varies by a call or two between runs (10 to 13 calls for 50 groups when this was written): the benchmark
// reports its own calibration's.

// apiCall is the message of the log record the middleware writes per call, in the task's logger.
const apiCall = "bench: api call"

// callCounter is an slog.Handler that counts apiCall records by their task.
type callCounter struct {
	mu    *sync.Mutex
	calls map[string]int
	task  string
}

func newCallCounter() *callCounter { return &callCounter{mu: &sync.Mutex{}, calls: map[string]int{}} }

func (h *callCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *callCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != apiCall {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[h.task]++ // "" outside a task
	return nil
}

func (h *callCounter) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		if a.Key == "task" {
			c.task = a.Value.String()
		}
	}
	return &c
}

func (h *callCounter) WithGroup(string) slog.Handler { return h }

// attributeCalls is an SDK option that logs apiCall in the logger of the task whose context makes the call.
func attributeCalls(counter *callCounter) func(*middleware.Stack) error {
	outside := slog.New(counter)
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchAttributeCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				l := engine.Logger(ctx)
				if l == slog.Default() { // outside a task
					l = outside
				}
				l.Log(ctx, slog.LevelDebug, apiCall)
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// criticalPath runs update --yes of a's cluster (an aws one, nothing of it in the cloud yet) as cloudup.Update
// does, counting each task's calls, and returns the calls of the dry run's and the apply's longest dependency
// paths together, the calls no task made, and how long the two runs took (milliseconds: the update's wall time
// without latency, which is mostly CPU).
func criticalPath(tb testing.TB, a *account) (path, unattributed int, ms float64) {
	tb.Helper()
	ctx := context.Background()
	stored, err := a.cs.Get(ctx, a.name)
	if err != nil {
		tb.Fatal(err)
	}
	c, igs, err := a.cs.Complete(stored)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := awstasks.LoadConfig(ctx, c.Spec.Region)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	for _, target := range []engine.Target{engine.DryRun, engine.Apply} {
		counter := newCallCounter()
		cfg := cfg.Copy()
		cfg.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), attributeCalls(counter))
		world := awstasks.NewCloud(cfg, c.Metadata.Name, c.Spec.DNSZone, a.cs.Store)
		g, err := cloudgraph.BuildAWSCloudGraph(c, igs)
		if err != nil {
			tb.Fatal(err)
		}
		world.NewRun()
		if _, err := engine.Run(ctx, g, world, engine.Options{Target: target, Logger: slog.New(counter)}); err != nil {
			tb.Fatalf("the calibration's %s: %v", target, err)
		}
		path += longestPath(g.Tasks(), counter.calls)
		unattributed += counter.calls[""]
	}
	return path, unattributed, since(start)
}

// longestPath returns the most calls along one dependency path of tasks, a task weighing calls[its key].
func longestPath(tasks []engine.Task, calls map[string]int) int {
	byKey := map[engine.Key]engine.Task{}
	for _, t := range tasks {
		byKey[t.Key()] = t
	}
	memo := map[engine.Key]int{}
	var longest func(t engine.Task) int
	longest = func(t engine.Task) int {
		k := t.Key()
		if n, ok := memo[k]; ok {
			return n
		}
		most := 0
		for _, d := range t.Deps() {
			if d == nil || reflect.ValueOf(d).Kind() == reflect.Pointer && reflect.ValueOf(d).IsNil() {
				continue
			}
			if dt, ok := byKey[d.Key()]; ok {
				most = max(most, longest(dt))
			}
		}
		memo[k] = most + calls[k.String()]
		return memo[k]
	}
	most := 0
	for _, t := range tasks {
		most = max(most, longest(t))
	}
	return most
}
