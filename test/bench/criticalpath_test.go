package bench

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"

	"kubeup.dev/kubeup/engine"
	awsprovider "kubeup.dev/kubeup/providers/aws"
	"kubeup.dev/kubeup/tasks/awstasks"
)

// The critical path of update --yes against a cloud whose every call takes L: no schedule, however concurrent,
// finishes before the longest chain of calls and waits that must follow one another. A task's calls follow one
// another (a task is sequential), and a task starts after its dependencies finish. update --yes runs three graphs
// one after the other, each fresh: the dry run, the apply, and, as AWS's reads lag its writes, the dry run that
// checks the apply (cloudup's settle); between them the pipeline makes calls of its own, one after the other
// (the reads that find what the update left unused, after the apply). So the bound is
//
//	the longest dependency path of each of the three graphs + the pipeline's own calls x L,
//
// where a path's length is the sum, over its tasks, of a task's API calls x L and of its own waits: a task that
// polls waits between its calls whatever the latency (Route53's GetChange comes half a second after the change).
// The calls and waits of each task are measured in a calibration run of the same three graphs against a fake
// without latency: an SDK middleware attributes each call to the task whose context makes it (engine.Logger(ctx)
// carries the task's key), and a gap of waitGap or more between two calls of one task is a wait (without latency
// the rest of a gap is the task's CPU). A call no task's context makes (a read shared by the run's tasks, made on
// its own context) is not on any path: the bound leaves it out, so it is a lower bound, and the benchmark's
// x-critical-path can only overstate how far the engine is from it. Which task makes a read that several share
// (the run's one DescribeX feeding every task's Find) is a race, so the bound varies by a call or two between
// runs: the benchmark reports its own calibration's. The calibration makes the pipeline's own calls as the
// pipeline does (awstasks.UnusedGroups: Deletions after the dry run, Delete after the apply), and the fake
// counts them.
//
// Before issue 25's engine work the bound counted the dry run and the apply only, and their calls only: 600 ms
// for 50 groups, where update --yes cannot take less than about 1.3 s (the check's dry run, the pipeline's three
// reads after the apply, and Route53's first poll half a second after the change are on its path too).

// apiCall is the message of the log record the middleware writes per call, in the task's logger.
const apiCall = "bench: api call"

// waitGap is the least gap between two calls of one task, in a run without latency, that counts as a wait of
// the task (a poll's delay) rather than its CPU: long enough that a loaded machine does not make one.
const waitGap = 100 * time.Millisecond

// callCounter is an slog.Handler that counts apiCall records by their task, and the task's waits between them.
type callCounter struct {
	mu    *sync.Mutex
	calls map[string]int
	last  map[string]time.Time     // the task's last call
	waits map[string]time.Duration // the gaps of waitGap or more between the task's calls
	task  string
}

func newCallCounter() *callCounter {
	return &callCounter{mu: &sync.Mutex{}, calls: map[string]int{}, last: map[string]time.Time{}, waits: map[string]time.Duration{}}
}

func (h *callCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *callCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != apiCall {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[h.task]++ // "" outside a task
	if last, ok := h.last[h.task]; ok && h.task != "" && r.Time.Sub(last) >= waitGap {
		h.waits[h.task] += r.Time.Sub(last)
	}
	h.last[h.task] = r.Time
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

// criticalPath runs the three graphs of update --yes of a's cluster (an aws one, nothing of it in the cloud yet)
// as cloudup.Update does, with the pipeline's search for what the update left unused after the dry run and after
// the apply, measuring each task's calls and waits. It returns the bound at latency milliseconds a call
// (milliseconds): the longest dependency path of each graph and the pipeline's own calls; the calls no task
// made; the pipeline's own calls; and the calls all of them made (of the services the fake's latency applies
// to, as a.rec records them).
func criticalPath(tb testing.TB, a *account, latency int) (path float64, unattributed, pipeline int, made stats) {
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
	calls := a.rec.take()[:0]
	// One world for the three runs, as the update has: what it found once (the hosted zone) it does not look up
	// again. Each run's tasks log to the run's counter; a call outside any task, to outside.
	outside := newCallCounter()
	cfg.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), attributeCalls(outside))
	world := awstasks.NewCloud(cfg, c.Metadata.Name, c.Spec.DNSZone, a.cs.Store)
	unused := awsprovider.UnusedGroups(c, igs)
	var planned []engine.Change
	for i, target := range []engine.Target{engine.DryRun, engine.Apply, engine.DryRun} {
		counter := newCallCounter()
		g, err := awsprovider.BuildCloudGraph(c, igs)
		if err != nil {
			tb.Fatal(err)
		}
		world.NewRun()
		if _, err := engine.Run(ctx, g, world, engine.Options{Target: target, Logger: slog.New(counter)}); err != nil {
			tb.Fatalf("the calibration's %s: %v", target, err)
		}
		path += longestPath(g.Tasks(), func(k string) float64 {
			return float64(counter.calls[k]*latency) + float64(counter.waits[k].Microseconds())/1000
		})
		calls = append(calls, a.rec.take()...)
		// The pipeline's calls, one after the other: the unused groups after the dry run and after the apply.
		switch i {
		case 0:
			planned, err = unused.Deletions(ctx, world, false)
		case 1:
			_, err = unused.Delete(ctx, world, planned)
		}
		if err != nil {
			tb.Fatal(err)
		}
		own := a.rec.take()
		pipeline += len(own)
		calls = append(calls, own...)
	}
	return path + float64(pipeline*latency), outside.calls[""], pipeline, statsOf(calls)
}

// longestPath returns the heaviest dependency path of tasks, a task weighing weight(its key).
func longestPath(tasks []engine.Task, weight func(key string) float64) float64 {
	byKey := map[engine.Key]engine.Task{}
	for _, t := range tasks {
		byKey[t.Key()] = t
	}
	memo := map[engine.Key]float64{}
	var longest func(t engine.Task) float64
	longest = func(t engine.Task) float64 {
		k := t.Key()
		if n, ok := memo[k]; ok {
			return n
		}
		most := 0.0
		for _, d := range t.Deps() {
			if d == nil || reflect.ValueOf(d).Kind() == reflect.Pointer && reflect.ValueOf(d).IsNil() {
				continue
			}
			if dt, ok := byKey[d.Key()]; ok {
				most = max(most, longest(dt))
			}
		}
		memo[k] = most + weight(k.String())
		return memo[k]
	}
	most := 0.0
	for _, t := range tasks {
		most = max(most, longest(t))
	}
	return most
}
