package engine

import "context"

// How many tasks run at once adapts per API class, as TCP adapts its congestion window. Every task has a class
// (Classed; tasks without one share the class ""). A class's window starts at Options.InitialWindow and grows by
// one per success, doubling every round of calls (slow start), until its API first pushes back; from then on it
// grows by one per round of `window` successes (additive increase), and each push back halves it
// (multiplicative decrease). It never exceeds the class's cap (Options.ClassLimits, else Options.Concurrency)
// nor drops below one. A push back is an attempt failing with a retryable error, or Pushback: the API throttled
// a call that its client then retried by itself (the AWS SDK does). A burst of push backs from attempts that all
// started before the last cut halves the window once, not once per error: each cut starts a new epoch, and only
// an attempt of the current epoch can cut.
type classState struct {
	limit     int  // the cap
	window    int  // how many of its tasks may run at once now
	avoid     bool // past slow start: grow by one per round
	fixed     bool // Options.FixedConcurrency: the window is the cap, always
	running   int
	successes int     // since the window last grew, past slow start
	epoch     uint32  // incremented at each cut
	ready     []int32 // FIFO, read from head
	head      int
	tasks     int // of the graph, in this class
}

func newClassState(limit int, o *Options) *classState {
	if o.FixedConcurrency {
		return &classState{limit: limit, window: limit, fixed: true}
	}
	return &classState{limit: limit, window: min(limit, o.InitialWindow)}
}

// succeeded grows the window after a successful attempt.
func (cs *classState) succeeded() {
	if cs.fixed || cs.window >= cs.limit {
		return
	}
	if !cs.avoid {
		cs.window++
		return
	}
	if cs.successes++; cs.successes >= cs.window {
		cs.window, cs.successes = cs.window+1, 0
	}
}

// pushedBack halves the window, once per epoch: epoch is the class's epoch when the attempt that met the push
// back started.
func (cs *classState) pushedBack(epoch uint32) {
	if cs.fixed || epoch != cs.epoch {
		return
	}
	cs.window, cs.successes, cs.avoid = max(1, cs.window/2), 0, true
	cs.epoch++
}

type pushback struct {
	class int32
	epoch uint32
}

// Pushback tells the engine that the API of the task running with ctx pushed back (throttled a call) even though
// the call then succeeded, retried by the API's client: the engine shrinks the window of the task's class as it
// does when an attempt fails with a retryable error. Call it from the client's retry hook. Outside a task, or
// after its run ended, it does nothing. It never blocks.
func Pushback(ctx context.Context) {
	a, ok := ctx.Value(attemptKey{}).(*attempt)
	if !ok {
		return
	}
	select {
	case a.run.pushed <- pushback{a.class, a.epoch}:
	case <-a.run.stopped:
	default:
		// The run loop is busy and push backs are queued: they are of this epoch, and one cut is enough.
	}
}
