package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"kubeup.dev/kubeup/engine"
)

// benchWorld is the world of the benchmark tasks. It holds nothing: the tasks' Find answers from the task
// itself. findDelay makes every Find sleep, to measure how well the executor overlaps slow calls.
type benchWorld struct {
	findDelay time.Duration
	bucket    *apiBucket // when set, every Find takes a token of it or fails as throttled
}

// benchTask is a task that does nothing: Find returns an object equal to the expected one, so there is never a
// change and Render is never called.
type benchTask struct {
	Name  string
	Value *int
	deps  []engine.Task // unexported: not compared
}

var _ engine.Resource[*benchTask, *benchWorld] = (*benchTask)(nil)
var _ engine.Renderer[*benchTask, *benchWorld] = (*benchTask)(nil)

func (t *benchTask) Key() engine.Key     { return engine.Key{Type: "BenchTask", Name: t.Name} }
func (t *benchTask) Deps() []engine.Task { return t.deps }

func (t *benchTask) Find(ctx context.Context, w *benchWorld) (*benchTask, error) {
	ok := w.bucket == nil || w.bucket.take()
	if w.findDelay > 0 {
		time.Sleep(w.findDelay)
	}
	if !ok {
		return nil, engine.Retryable(errThrottled)
	}
	return &benchTask{Name: t.Name, Value: t.Value}, nil
}

func (t *benchTask) CheckChanges(actual, expected, changes *benchTask) error { return nil }

func (t *benchTask) Render(ctx context.Context, w *benchWorld, actual, expected, changes *benchTask) error {
	return errors.New("benchTask has no changes: Render must not be called")
}

// shape is a graph's structure, computed once per benchmark: the tasks' names and, for each task, the indexes of
// the tasks it depends on (always earlier ones).
type shape struct {
	names []string
	deps  [][]int32
}

func newShape(n int) *shape {
	s := &shape{names: make([]string, n), deps: make([][]int32, n)}
	for i := range s.names {
		s.names[i] = fmt.Sprintf("task-%06d", i)
	}
	return s
}

// wideShape is n independent tasks.
func wideShape(n int) *shape { return newShape(n) }

// chainShape is n tasks in a line, each depending on the previous one.
func chainShape(n int) *shape {
	s := newShape(n)
	for i := 1; i < n; i++ {
		s.deps[i] = []int32{int32(i - 1)}
	}
	return s
}

// layeredShape is a random DAG of layers layers of n/layers tasks; every task past the first layer depends on
// fanIn distinct random tasks of the layer before it. The seed is fixed, so the graph is the same every run.
func layeredShape(n, layers, fanIn int) *shape {
	s := newShape(n)
	width := n / layers
	rng := rand.New(rand.NewPCG(1, 2))
	for l := 1; l < layers; l++ {
		prev := int32((l - 1) * width)
		for i := l * width; i < (l+1)*width; i++ {
			deps := make([]int32, 0, fanIn)
			for len(deps) < fanIn {
				d := prev + int32(rng.IntN(width))
				dup := false
				for _, e := range deps {
					dup = dup || e == d
				}
				if !dup {
					deps = append(deps, d)
				}
			}
			s.deps[i] = deps
		}
	}
	return s
}

// criticalPath is the number of tasks on the longest dependency chain.
func (s *shape) criticalPath() int {
	depth := make([]int, len(s.names))
	longest := 0
	for i, deps := range s.deps {
		depth[i] = 1
		for _, d := range deps {
			depth[i] = max(depth[i], depth[d]+1)
		}
		longest = max(longest, depth[i])
	}
	return longest
}

// graph builds a fresh graph of fresh tasks with s's structure.
func (s *shape) graph() *engine.Graph[*benchWorld] {
	g := engine.NewGraph[*benchWorld]()
	tasks := make([]*benchTask, len(s.names))
	for i, name := range s.names {
		v := i
		t := &benchTask{Name: name, Value: &v}
		if len(s.deps[i]) > 0 {
			t.deps = make([]engine.Task, len(s.deps[i]))
			for j, d := range s.deps[i] {
				t.deps[j] = tasks[d]
			}
		}
		tasks[i] = engine.Add(g, t)
	}
	return g
}

// checkNoop fails the benchmark unless a run of n no-op tasks succeeded with an empty plan.
func checkNoop(b *testing.B, res *engine.Result, err error, n int) {
	b.Helper()
	if err != nil {
		b.Fatalf("Run: %v", err)
	}
	if !res.Plan.Empty() || res.Done != n {
		b.Fatalf("Run: %d changes, %d of %d tasks done; want 0 changes, all done", len(res.Plan.Changes), res.Done, n)
	}
}

// BenchmarkExecute runs graphs of no-op tasks with the Apply target and the default concurrency. Building the
// graph is not timed; validating and running it is. B/task is the bytes allocated per task while timed.
func BenchmarkExecute(b *testing.B) {
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
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					g := s.graph()
					runtime.ReadMemStats(&ms)
					before := ms.TotalAlloc
					b.StartTimer()
					res, err := engine.Run(ctx, g, world, engine.Options{Target: engine.Apply})
					b.StopTimer()
					runtime.ReadMemStats(&ms)
					allocated += ms.TotalAlloc - before
					checkNoop(b, res, err, n)
				}
				b.ReportMetric(float64(allocated)/float64(b.N)/float64(n), "B/task")
			})
		}
	}
}

// reportWorld is the world of reportTask: nothing; Find derives the actual object from the task's index.
type reportWorld struct{}

// reportTask is a task whose Find always finds a difference: a third are missing (create), a third differ in
// scalar fields, and a third differ in one line of a multi-line file content.
type reportTask struct {
	Name    string
	Zone    *string
	SizeGB  *int
	Tags    map[string]string
	Content *string
	index   int
}

var _ engine.Resource[*reportTask, *reportWorld] = (*reportTask)(nil)

func (t *reportTask) Key() engine.Key     { return engine.Key{Type: "ReportTask", Name: t.Name} }
func (t *reportTask) Deps() []engine.Task { return nil }

func (t *reportTask) Find(ctx context.Context, w *reportWorld) (*reportTask, error) {
	switch t.index % 3 {
	case 0:
		return nil, nil
	case 1:
		size := *t.SizeGB / 2
		zone := "zone-b"
		return &reportTask{Name: t.Name, Zone: &zone, SizeGB: &size, Tags: map[string]string{"owner": "old"},
			Content: t.Content}, nil
	default:
		content := strings.Replace(*t.Content, "line 10 ", "line 10 (old) ", 1)
		return &reportTask{Name: t.Name, Zone: t.Zone, SizeGB: t.SizeGB, Tags: t.Tags, Content: &content}, nil
	}
}

func (t *reportTask) CheckChanges(actual, expected, changes *reportTask) error { return nil }

// fileContent is a 30-line text, different for each task: not YAML (the plan would show a YAML text's change by
// field path), so the report shows its change by line.
func fileContent(i int) string {
	var sb strings.Builder
	for l := 0; l < 30; l++ {
		fmt.Fprintf(&sb, "line %d of file %d = some configuration value\n", l, i)
	}
	return sb.String()
}

// BenchmarkReport times Plan.WriteText of a dry run's plan of 10,000 changes.
func BenchmarkReport(b *testing.B) {
	const n = 10000
	g := engine.NewGraph[*reportWorld]()
	for i := 0; i < n; i++ {
		zone, size, content := "zone-a", 10+i%50, fileContent(i)
		engine.Add(g, &reportTask{Name: fmt.Sprintf("task-%05d", i), Zone: &zone, SizeGB: &size,
			Tags: map[string]string{"owner": "team", "cluster": "bench"}, Content: &content, index: i})
	}
	res, err := engine.Run(context.Background(), g, &reportWorld{}, engine.Options{Target: engine.DryRun})
	if err != nil {
		b.Fatalf("Run: %v", err)
	}
	if got := len(res.Plan.Changes); got != n {
		b.Fatalf("plan has %d changes, want %d", got, n)
	}
	var out bytes.Buffer
	if err := res.Plan.WriteText(&out); err != nil {
		b.Fatalf("WriteText: %v", err)
	}
	text := out.String()
	for _, want := range []string{"Will create resources:", "Will modify resources:", "- line 10 (old) of file 2 =",
		"+ line 10 of file 2 =", "SizeGB    5 -> 11"} {
		if !strings.Contains(text, want) {
			b.Fatalf("report lacks %q", want)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := res.Plan.WriteText(io.Discard); err != nil {
			b.Fatalf("WriteText: %v", err)
		}
	}
	b.ReportMetric(float64(len(text)), "report-bytes")
}

// tunings are the engine's settings the latency-bound benchmarks compare: its defaults (adaptive) and the fixed
// concurrency of 10 it had before.
var tunings = []struct {
	name string
	opts engine.Options
}{
	{"adaptive", engine.Options{}},
	{"fixed-10", engine.Options{Concurrency: 10, FixedConcurrency: true}},
}

// BenchmarkLatency runs 1,000 tasks of a random layered DAG (10 layers, fan-in 3) whose Find takes 5 ms each:
// latency-bound work, as cloud calls are. It reports the wall time as a multiple of the critical path (10 Finds
// in a row: 50 ms), which no scheduler can beat, with the engine's defaults (adaptive: the window of the tasks'
// class grows while their calls succeed) and with the fixed concurrency of 10 the engine had before.
func BenchmarkLatency(b *testing.B) {
	const (
		n     = 1000
		delay = 5 * time.Millisecond
	)
	s := layeredShape(n, 10, 3)
	critical := time.Duration(s.criticalPath()) * delay
	ctx := context.Background()
	world := &benchWorld{findDelay: delay}
	for _, bc := range tunings {
		b.Run(bc.name, func(b *testing.B) {
			var wall time.Duration
			b.ReportAllocs()
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				g := s.graph()
				opts := bc.opts
				opts.Target = engine.Apply
				b.StartTimer()
				start := time.Now()
				res, err := engine.Run(ctx, g, world, opts)
				wall += time.Since(start)
				b.StopTimer()
				checkNoop(b, res, err, n)
			}
			b.ReportMetric(float64(wall)/float64(b.N)/float64(critical), "x-critical-path")
			b.ReportMetric(float64(wall)/float64(b.N)/float64(time.Millisecond), "ms-wall")
		})
	}
}

// errThrottled is what a Find refused by the API's token bucket returns, as a cloud's RequestLimitExceeded.
var errThrottled = errors.New("RequestLimitExceeded: request limit exceeded")

// apiBucket is an API's rate limit as EC2 documents its own: a bucket of burst tokens, refilled at rate a
// second; a call takes a token, and a call that finds none is refused (throttled). It counts both.
type apiBucket struct {
	rate, burst float64
	mu          sync.Mutex
	tokens      float64
	last        time.Time
	calls       int
	throttled   int
}

func newAPIBucket(rate, burst float64) *apiBucket {
	return &apiBucket{rate: rate, burst: burst, tokens: burst, last: time.Now()}
}

// take takes a token, or reports that there is none (the call is throttled).
func (b *apiBucket) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	b.calls++
	if b.tokens < 1 {
		b.throttled++
		return false
	}
	b.tokens--
	return true
}

// The rate-limited case: rateLimitTasks tasks of a random layered DAG (10 layers, fan-in 3), every Find a call
// of 5 ms to an API that allows rateLimitRate calls a second from a bucket of rateLimitBurst tokens, shared by
// all of them; a refused call fails after 5 ms with a throttling error (Retryable). No executor can finish
// before the bucket lets the last call through: (tasks - burst) / rate.
const (
	rateLimitTasks = 1000
	rateLimitRate  = 100 // calls a second
	rateLimitBurst = 10
	rateLimitDelay = 5 * time.Millisecond
)

// rateLimitBound is the wall time the bucket allows at best.
func rateLimitBound() time.Duration {
	return time.Duration(float64(rateLimitTasks-rateLimitBurst) / rateLimitRate * float64(time.Second))
}

// reportRateLimit reports a rate-limited run's figures: the mean wall time, as a multiple of the bound too, and
// the mean throttled and total calls.
func reportRateLimit(b *testing.B, wall time.Duration, throttled, calls int) {
	n := float64(b.N)
	b.ReportMetric(float64(wall.Microseconds())/1000/n, "ms-wall")
	b.ReportMetric(float64(wall)/n/float64(rateLimitBound()), "x-bound")
	b.ReportMetric(float64(throttled)/n, "throttled-calls")
	b.ReportMetric(float64(calls)/n, "calls-total")
}

// BenchmarkRateLimit runs the rate-limited case with the engine's defaults (adaptive) and with the fixed
// concurrency of 10 it had before. x-bound is the wall time as a multiple of rateLimitBound.
func BenchmarkRateLimit(b *testing.B) {
	s := layeredShape(rateLimitTasks, 10, 3)
	for _, bc := range tunings {
		b.Run(bc.name, func(b *testing.B) {
			var wall time.Duration
			var throttled, calls int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				g := s.graph()
				world := &benchWorld{findDelay: rateLimitDelay, bucket: newAPIBucket(rateLimitRate, rateLimitBurst)}
				opts := bc.opts
				opts.Target = engine.Apply
				b.StartTimer()
				start := time.Now()
				res, err := engine.Run(context.Background(), g, world, opts)
				wall += time.Since(start)
				checkNoop(b, res, err, rateLimitTasks)
				throttled += world.bucket.throttled
				calls += world.bucket.calls
			}
			reportRateLimit(b, wall, throttled, calls)
		})
	}
}
