package engine

import (
	"context"
	"errors"
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
	for _, name := range []string{"a", "b", "c", "d"} {
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
	ex.dispatch()
	// the jobs stay in ex.work, never run: finish is fed by hand
	cs := ex.classes["ec2"]
	throttled := Retryable(errors.New("throttled"))
	for i := int32(0); i < 3; i++ {
		ex.finish(outcome{job: job{i: i, epoch: 0}, err: throttled}, false)
	}
	if cs.current != 4 {
		t.Fatalf("after a burst of 3 errors, current = %d, want 8 halved once = 4", cs.current)
	}
	ex.finish(outcome{job: job{i: 3, epoch: cs.epoch}, err: throttled}, false)
	if cs.current != 2 {
		t.Errorf("after an error from a later attempt, current = %d, want 2", cs.current)
	}
	ex.stopRetries()
}
