package sharedread

import (
	"context"
	"errors"
	"sync"
)

// Shared is one read that concurrent callers share: the first caller makes it, the others wait for its answer,
// and later callers read the answer until it is forgotten. A failed read is not kept: the next caller tries
// again. The zero value is ready to use.
type Shared[T any] struct {
	mu   sync.Mutex
	call *call[T]
}

type call[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// ErrPanicked is the error the waiters of a read get when its load panicked (the panic goes on in the caller
// that made the read).
var ErrPanicked = errors.New("the read panicked")

// Get returns the answer of load, made at most once until Forget. A caller that waits for another's read stops
// waiting when its own ctx ends.
func (s *Shared[T]) Get(ctx context.Context, load func(context.Context) (T, error)) (T, error) {
	s.mu.Lock()
	c := s.call
	if c == nil {
		c = &call[T]{done: make(chan struct{})}
		s.call = c
		s.mu.Unlock()
		func() {
			defer func() {
				if c.err != nil {
					s.forgetCall(c)
				}
				close(c.done)
			}()
			c.err = ErrPanicked // replaced unless load panics
			c.val, c.err = load(ctx)
		}()
		return c.val, c.err
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Forget drops the answer: the next Get reads again. A read in flight finishes for those waiting on it.
func (s *Shared[T]) Forget() {
	s.mu.Lock()
	s.call = nil
	s.mu.Unlock()
}

func (s *Shared[T]) forgetCall(c *call[T]) {
	s.mu.Lock()
	if s.call == c {
		s.call = nil
	}
	s.mu.Unlock()
}

// Keyed is a Shared read per key (the subnets of one VPC, the disks of one zone). The zero value is ready to use.
type Keyed[T any] struct {
	mu sync.Mutex
	m  map[string]*Shared[T]
}

// Of returns the read of key.
func (k *Keyed[T]) Of(key string) *Shared[T] {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*Shared[T]{}
	}
	s := k.m[key]
	if s == nil {
		s = &Shared[T]{}
		k.m[key] = s
	}
	return s
}

// Forget drops the reads of every key.
func (k *Keyed[T]) Forget() {
	k.mu.Lock()
	k.m = nil
	k.mu.Unlock()
}
