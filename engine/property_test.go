package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// TestExecutorProperties runs random graphs with random failures, not-ready retries and API classes, and checks
// what must hold whatever the shape: a task starts only after each of its dependencies finished; a failed task's
// dependents, and only they, are skipped; every other task is done; the limits are never exceeded.
func TestExecutorProperties(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { checkRandomRun(t, seed) })
	}
}

func checkRandomRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	n := 20 + rng.IntN(80)
	world := newWorld()
	g := engine.NewGraph[*World]()
	tasks := make([]*Item, n)
	deps := make([][]int, n)
	fails := make([]bool, n)
	var mu sync.Mutex
	finished := map[string]bool{}
	running, maxRunning, ec2, maxEC2 := 0, 0, 0, 0
	var violations []string

	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t%03d", i)
		it := &Item{Name: name}
		for j := 0; j < i; j++ {
			if rng.IntN(100) < 6 {
				deps[i] = append(deps[i], j)
				it.Needs = append(it.Needs, tasks[j])
			}
		}
		if rng.IntN(3) == 0 {
			it.Class = "ec2"
		}
		fails[i] = rng.IntN(12) == 0
		notReady := rng.IntN(5) == 0
		tasks[i] = engine.Add(g, it)
		myDeps, class, fail := deps[i], it.Class, fails[i]
		world.findHook[name] = func(ctx context.Context, attempt int) error {
			mu.Lock()
			for _, d := range myDeps {
				if !finished[tasks[d].Name] {
					violations = append(violations, fmt.Sprintf("%s started before its dependency %s finished", name, tasks[d].Name))
				}
			}
			running++
			maxRunning = max(maxRunning, running)
			if class == "ec2" {
				ec2++
				maxEC2 = max(maxEC2, ec2)
			}
			mu.Unlock()
			defer func() {
				mu.Lock()
				running--
				if class == "ec2" {
					ec2--
				}
				mu.Unlock()
			}()
			switch {
			case fail:
				return errors.New("injected failure")
			case notReady && attempt == 1:
				return engine.NotReady(errors.New("not yet"))
			}
			mu.Lock()
			finished[name] = true
			mu.Unlock()
			return nil
		}
	}

	_, err := engine.Run(guard(t), g, world, fastRetry(engine.Options{Target: engine.Apply, Concurrency: 4,
		ClassLimits: map[string]int{"ec2": 2}}))

	// What should have happened: a task is skipped when any dependency failed or was skipped.
	wantSkipped := make([]bool, n)
	for i := 0; i < n; i++ {
		for _, d := range deps[i] {
			if fails[d] || wantSkipped[d] {
				wantSkipped[i] = true
			}
		}
	}
	gotFailed, gotSkipped := map[string]bool{}, map[string]bool{}
	var runErr *engine.RunError
	if errors.As(err, &runErr) {
		for _, te := range runErr.Failed {
			gotFailed[te.Key.Name] = true
		}
		for _, te := range runErr.Skipped {
			gotSkipped[te.Key.Name] = true
			if !contains(te.Err.Error(), "dependency Item/") || !contains(te.Err.Error(), " failed") {
				t.Errorf("%s: skipped because %q, want the failed dependency named", te.Key, te.Err)
			}
		}
	} else if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	for i, it := range tasks {
		wantFailed := fails[i] && !wantSkipped[i]
		switch {
		case gotFailed[it.Name] != wantFailed:
			t.Errorf("%s: failed=%v, want %v", it.Name, gotFailed[it.Name], wantFailed)
		case gotSkipped[it.Name] != wantSkipped[i]:
			t.Errorf("%s: skipped=%v, want %v", it.Name, gotSkipped[it.Name], wantSkipped[i])
		case !wantFailed && !wantSkipped[i] && !finished[it.Name]:
			t.Errorf("%s was neither failed nor skipped, yet not done", it.Name)
		case wantSkipped[i] && world.count(world.finds, it.Name) > 0:
			t.Errorf("%s was skipped but ran", it.Name)
		}
	}
	for _, v := range violations {
		t.Error(v)
	}
	if maxRunning > 4 || maxEC2 > 2 {
		t.Errorf("ran %d at once (limit 4), %d ec2 at once (limit 2)", maxRunning, maxEC2)
	}
}
