package sharedread

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestSharedReadIsMadeOnceForConcurrentCallers(t *testing.T) {
	var s Shared[int]
	var loads atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) (int, error) {
		loads.Add(1)
		<-release
		return 42, nil
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := s.Get(context.Background(), load); v != 42 || err != nil {
				t.Errorf("Get = %d, %v", v, err)
			}
		}()
	}
	for loads.Load() == 0 { // wait until the first caller reads; the others wait on it or come later
	}
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("%d reads for 50 concurrent callers, want 1", n)
	}
	s.Forget()
	if _, err := s.Get(context.Background(), func(context.Context) (int, error) { loads.Add(1); return 0, nil }); err != nil {
		t.Fatal(err)
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("after Forget: %d reads, want 2", n)
	}
}

func TestSharedReadDoesNotKeepAFailure(t *testing.T) {
	var s Shared[int]
	boom := errors.New("throttled")
	if _, err := s.Get(context.Background(), func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	v, err := s.Get(context.Background(), func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("after a failure: %d, %v, want a new read", v, err)
	}
}

func TestSharedReadWaiterStopsWithItsContext(t *testing.T) {
	var s Shared[int]
	release := make(chan struct{})
	started := make(chan struct{})
	go s.Get(context.Background(), func(context.Context) (int, error) { close(started); <-release; return 1, nil })
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, func(context.Context) (int, error) { return 2, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	close(release)
}

func TestKeyedReadsAreApartByKey(t *testing.T) {
	var k Keyed[string]
	a, _ := k.Of("a").Get(context.Background(), func(context.Context) (string, error) { return "A", nil })
	b, _ := k.Of("b").Get(context.Background(), func(context.Context) (string, error) { return "B", nil })
	again, _ := k.Of("a").Get(context.Background(), func(context.Context) (string, error) { return "new", nil })
	if a != "A" || b != "B" || again != "A" {
		t.Errorf("got %q %q %q, want A B A", a, b, again)
	}
	k.Forget()
	if v, _ := k.Of("a").Get(context.Background(), func(context.Context) (string, error) { return "new", nil }); v != "new" {
		t.Errorf("after Forget: %q, want a new read", v)
	}
}
