package engine_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// The anchor of the engine's benchmarks: kops' executor model (upup/pkg/fi/executor.go, RunTasks), measured on
// this machine on the same graphs and the same tasks as BenchmarkExecute and BenchmarkLatency, so that
// docs/performance.md can set the two side by side. It is written from the model's idea, not from its code:
//
//   - tasks run in waves: each wave looks at every task not yet done and collects those whose dependencies are
//     all done;
//   - every task of the wave runs in a goroutine of its own (no bound on how many run at once), and the wave
//     waits for all of them before the next wave is collected;
//   - the run ends when a wave finds nothing to run.
//
// A task's work here is what the engine does for a no-op task, minus its bookkeeping: Find, then a comparison
// of the found object with the expected one. kops' per-task extras (its per-wave log line, reflection-based
// change detection, deadlines and retries) are left out, which flatters the anchor.

// wavesState is one task of the wave model: whether it is done, and the tasks it waits for.
type wavesState struct {
	task *benchTask
	done bool
	deps []*wavesState
}

// runWaves runs tasks in kops' waves, and returns how many waves it took.
func runWaves(ctx context.Context, states []*wavesState, w *benchWorld) (int, error) {
	waves := 0
	for {
		var ready []*wavesState
		for _, st := range states {
			if st.done {
				continue
			}
			ok := true
			for _, d := range st.deps {
				if !d.done {
					ok = false
					break
				}
			}
			if ok {
				ready = append(ready, st)
			}
		}
		if len(ready) == 0 {
			break
		}
		waves++
		errs := make([]error, len(ready))
		var wg sync.WaitGroup
		for i, st := range ready {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = runWaveTask(ctx, st.task, w)
			}()
		}
		wg.Wait()
		for i, st := range ready {
			if errs[i] != nil {
				return waves, fmt.Errorf("task %s: %w", st.task.Name, errs[i])
			}
			st.done = true
		}
	}
	for _, st := range states {
		if !st.done {
			return waves, fmt.Errorf("task %s never ran: a dependency cycle", st.task.Name)
		}
	}
	return waves, nil
}

// runWaveTask is one no-op task: Find, and a change if what it found differs from what is expected.
func runWaveTask(ctx context.Context, t *benchTask, w *benchWorld) error {
	actual, err := t.Find(ctx, w)
	if err != nil {
		return err
	}
	if actual == nil || actual.Name != t.Name || (actual.Value == nil) != (t.Value == nil) ||
		(actual.Value != nil && *actual.Value != *t.Value) {
		return fmt.Errorf("found %+v, want %+v: a no-op task must find no change", actual, t)
	}
	return nil
}

// states builds fresh wave states with s's structure.
func (s *shape) states() []*wavesState {
	states := make([]*wavesState, len(s.names))
	for i, name := range s.names {
		v := i
		st := &wavesState{task: &benchTask{Name: name, Value: &v}}
		for _, d := range s.deps[i] {
			st.deps = append(st.deps, states[d])
		}
		states[i] = st
	}
	return states
}

// BenchmarkKopsWaves runs BenchmarkExecute's graphs in kops' waves (the anchor of the engine-scale rows), under
// the same sub-names, and BenchmarkLatency's case (latency). Building the states is not timed; collecting and
// running the waves is. B/task is the bytes allocated per task while timed; waves is how many waves the graph
// took.
func BenchmarkKopsWaves(b *testing.B) {
	shapes := []struct {
		name  string
		build func(n int) *shape
	}{
		{"wide", wideShape},
		{"chain", chainShape},
		{"layered", func(n int) *shape { return layeredShape(n, 10, 3) }},
	}
	ctx := context.Background()
	world := &benchWorld{}
	for _, sh := range shapes {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/n=%d", sh.name, n), func(b *testing.B) {
				s := sh.build(n)
				b.ReportAllocs()
				var allocated uint64
				var ms runtime.MemStats
				waves := 0
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					states := s.states()
					runtime.ReadMemStats(&ms)
					before := ms.TotalAlloc
					b.StartTimer()
					w, err := runWaves(ctx, states, world)
					b.StopTimer()
					runtime.ReadMemStats(&ms)
					allocated += ms.TotalAlloc - before
					if err != nil {
						b.Fatal(err)
					}
					if w != s.criticalPath() {
						b.Fatalf("%d waves, want %d (the critical path)", w, s.criticalPath())
					}
					waves = w
				}
				b.ReportMetric(float64(allocated)/float64(b.N)/float64(n), "B/task")
				b.ReportMetric(float64(waves), "waves")
			})
		}
	}
	b.Run("latency", benchmarkKopsWavesLatency)
}

// benchmarkKopsWavesLatency (BenchmarkKopsWaves/latency) is BenchmarkLatency's case in kops' waves: 1,000 tasks of a random layered DAG (10
// layers, fan-in 3) whose Find takes 5 ms each. x-critical-path is the wall time as a multiple of the critical
// path (10 tasks x 5 ms): every wave runs all its tasks at once, so it lands near 1 on an idle machine; with a
// real cloud, the same unbounded waves are what throttling punishes.
func benchmarkKopsWavesLatency(b *testing.B) {
	const (
		n     = 1000
		delay = 5 * time.Millisecond
	)
	s := layeredShape(n, 10, 3)
	critical := time.Duration(s.criticalPath()) * delay
	ctx := context.Background()
	world := &benchWorld{findDelay: delay}
	var wall time.Duration
	b.ReportAllocs()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		states := s.states()
		b.StartTimer()
		start := time.Now()
		_, err := runWaves(ctx, states, world)
		wall += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms-wall")
	b.ReportMetric(float64(wall)/float64(b.N)/float64(critical), "x-critical-path")
}

// runBoundedWalk runs tasks in Terraform's model (its graph walk, -parallelism): every task starts as soon as its
// dependencies are done, but at most parallelism of them run at once. Written from the idea, not from its code.
// A task whose Find fails with a throttling error is retried in place, holding its slot, after retryDelay(attempt)
// (attempt 1 for the first retry), as an SDK's retryer does inside the call; nil retryDelay: no retry.
func runBoundedWalk(ctx context.Context, s *shape, w *benchWorld, parallelism int, retryDelay func(attempt int) time.Duration) error {
	done := make([]chan struct{}, len(s.names))
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, parallelism)
	errs := make([]error, len(s.names))
	var wg sync.WaitGroup
	for i, name := range s.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			for _, d := range s.deps[i] {
				<-done[d]
				if errs[d] != nil {
					errs[i] = fmt.Errorf("dependency %s failed", s.names[d])
					return
				}
			}
			sem <- struct{}{}
			v := i
			t := &benchTask{Name: name, Value: &v}
			errs[i] = runWaveTask(ctx, t, w)
			for attempt := 1; retryDelay != nil && errors.Is(errs[i], errThrottled); attempt++ {
				time.Sleep(retryDelay(attempt))
				errs[i] = runWaveTask(ctx, t, w)
			}
			<-sem
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("task %s: %w", s.names[i], err)
		}
	}
	return nil
}

// BenchmarkTerraformWalk/latency is BenchmarkLatency's case in Terraform's model at its default -parallelism of
// 10: the anchor a bounded, non-adaptive executor gives. x-critical-path is as in BenchmarkKopsWaves/latency.
func BenchmarkTerraformWalk(b *testing.B) {
	b.Run("latency", func(b *testing.B) {
		const (
			n           = 1000
			delay       = 5 * time.Millisecond
			parallelism = 10 // Terraform's default
		)
		s := layeredShape(n, 10, 3)
		critical := time.Duration(s.criticalPath()) * delay
		ctx := context.Background()
		world := &benchWorld{findDelay: delay}
		var wall time.Duration
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := runBoundedWalk(ctx, s, world, parallelism, nil); err != nil {
				b.Fatal(err)
			}
			wall += time.Since(start)
		}
		b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms-wall")
		b.ReportMetric(float64(wall)/float64(b.N)/float64(critical), "x-critical-path")
	})
}

// BenchmarkSDKBackoffWalk/ratelimit is BenchmarkRateLimit's case in Terraform's model at its default
// -parallelism of 10, each throttled call retried by the AWS SDK's own backoff (aws/retry's
// ExponentialJitterBackoff with the standard retryer's 20 s cap: a random delay below 2^attempt seconds) until it
// succeeds: the anchor of the rate-limited row. The SDK's retry quota and its limit of 3 attempts are left out
// (with them some tasks would fail), which flatters the anchor.
func BenchmarkSDKBackoffWalk(b *testing.B) {
	b.Run("ratelimit", func(b *testing.B) {
		const parallelism = 10
		s := layeredShape(rateLimitTasks, 10, 3)
		backoff := retry.NewExponentialJitterBackoff(retry.DefaultMaxBackoff)
		delay := func(attempt int) time.Duration {
			d, err := backoff.BackoffDelay(attempt, errThrottled)
			if err != nil {
				b.Fatal(err)
			}
			return d
		}
		var wall time.Duration
		var throttled, calls int
		for i := 0; i < b.N; i++ {
			world := &benchWorld{findDelay: rateLimitDelay, bucket: newAPIBucket(rateLimitRate, rateLimitBurst)}
			start := time.Now()
			if err := runBoundedWalk(context.Background(), s, world, parallelism, delay); err != nil {
				b.Fatal(err)
			}
			wall += time.Since(start)
			throttled += world.bucket.throttled
			calls += world.bucket.calls
		}
		reportRateLimit(b, wall, throttled, calls)
	})
}
