package engine

import (
	"context"
	"math"
	"time"
)

// How fast the tasks of one API class start adapts to its API in two ways: a window, as TCP adapts its
// congestion window, and a rate, as a client that meets a token bucket must. Every task has a class (Classed;
// tasks without one share the class "").
//
// The window: how many of the class's tasks run at once. It starts at Options.InitialWindow (by default half the
// class's cap, or 10 if that is more: open enough that a layer of a hundred slow calls starts at once) and grows
// by one per success, doubling every round of calls (slow start), until its API first pushes back; from then on
// it grows by one per round of `window` successes (additive increase), and each push back halves it, or halves
// how many of its tasks were running then if that is fewer: a wide-open window that was not full is no limit
// (multiplicative decrease). It never exceeds the class's cap (Options.ClassLimits, else Options.Concurrency)
// nor drops below one.
//
// The rate: how many of its tasks start per second. A window alone cannot steer a rate (one 5 ms call at a time
// is already 200 calls a second), and clouds limit rates with token buckets. A class has no rate until an attempt
// of it first fails with a retryable error: from then on its tasks start only as a token bucket of its own
// allows (saving at most rateBurst's worth of tokens). Its fill rate starts at what the API let succeed (the
// class's successes per second since its first start, counted over at least a second so that a first burst is
// not taken for a rate) or at half the window a second, whichever is more; until the next such failure it
// grows by rateFastGain per success (while the rate binds, it multiplies by e^rateFastGain a second: it finds
// the API's rate in a fraction of a second), then by rateGain per success (+rateGain*100% a second), and each
// later failure multiplies it by rateCut, leaving the window alone. The first retry of a task whose attempt
// failed so waits for a token, not for the backoff (see executor.finish). A Pushback (a throttled call its client
// retried by itself, as the AWS SDK's adaptive mode does, pacing its own calls) cuts the window but leaves the
// rate alone.
//
// A push back is an attempt failing with a retryable error, or Pushback. A burst of push backs from attempts
// that all started before the last cut cuts once, not once per error: each cut starts a new epoch, and only an
// attempt of the current epoch can cut.
type classState struct {
	limit     int  // the cap
	window    int  // how many of its tasks may run at once now
	avoid     bool // past slow start: grow by one per round
	fixed     bool // Options.FixedConcurrency: the window is the cap, always; no rate
	running   int
	successes int     // since the window last grew, past slow start
	epoch     uint32  // incremented at each cut
	ready     []int32 // FIFO, read from head
	head      int
	tasks     int // of the graph, in this class

	// The rate, from the first push back on.
	rate     float64   // calls a second; 0: none yet
	rateFast bool      // between the first push back and the second: grow by rateFastGain
	tokens   float64   // of the class's bucket, as of filled
	filled   time.Time // when tokens was last brought up to date
	began    time.Time // the class's first start
	wins     int       // successes since began
}

const (
	rateFastGain = 4.0 // per success, in calls a second, until the second push back
	rateGain     = 0.1 // per success, in calls a second, after it
	rateCut      = 0.9 // a push back multiplies the rate by it
	rateMin      = 0.5 // calls a second: the least a class is allowed
	// rateBurst is how long a class's bucket may save its tokens for: how many calls may start at once after a
	// lull, at least one.
	rateBurst = 20 * time.Millisecond
)

func newClassState(limit int, o *Options) *classState {
	if o.FixedConcurrency {
		return &classState{limit: limit, window: limit, fixed: true}
	}
	window := o.InitialWindow
	if window <= 0 {
		window = max(10, limit/2)
	}
	return &classState{limit: limit, window: min(limit, window)}
}

// succeeded grows the window, and the rate if there is one, after a successful attempt.
func (cs *classState) succeeded() {
	if cs.fixed {
		return
	}
	cs.wins++
	if cs.rate > 0 {
		if cs.rateFast {
			cs.rate += rateFastGain
		} else {
			cs.rate += rateGain
		}
	}
	if cs.window >= cs.limit {
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

// pushedBack slows the class down after a push back, once per epoch: epoch is the class's epoch when the attempt
// that met the push back started; failed says the attempt failed with it (else it is a Pushback); now is when it
// came. It halves the window (or the tasks under way, if fewer), and a failure sets the rate; once the class has
// a rate, a failure cuts the rate instead.
func (cs *classState) pushedBack(epoch uint32, failed bool, now time.Time) {
	if cs.fixed || epoch != cs.epoch {
		return
	}
	cs.epoch++
	if failed && cs.rate > 0 {
		// The class's bucket paces it: the rate is what a failure cuts. Halving the window too would soon hold
		// one short call at a time, which is no rate at all.
		cs.rate, cs.rateFast = max(rateMin, cs.rate*rateCut), false
		return
	}
	if failed {
		elapsed := max(time.Second, now.Sub(cs.began))
		cs.rate, cs.rateFast = max(rateMin, float64(cs.wins)/elapsed.Seconds(), float64(cs.window/2)), true
		cs.tokens, cs.filled = 0, now
	}
	flight := cs.running // the attempts of the class under way when the API pushed back
	if failed {
		flight++ // and the one that failed
	}
	cs.window, cs.successes, cs.avoid = max(1, min(cs.window, flight)/2), 0, true
}

// mayStart reports whether the class's bucket holds a token for one more start at now, and takes it if so. When
// it does not, wait is how long until it will.
func (cs *classState) mayStart(now time.Time) (ok bool, wait time.Duration) {
	if cs.rate == 0 {
		return true, 0
	}
	burst := max(1, cs.rate*rateBurst.Seconds())
	cs.tokens = min(burst, cs.tokens+now.Sub(cs.filled).Seconds()*cs.rate)
	cs.filled = now
	if cs.tokens >= 1 {
		cs.tokens--
		return true, 0
	}
	return false, time.Duration(math.Ceil((1 - cs.tokens) / cs.rate * float64(time.Second)))
}

type pushback struct {
	class int32
	epoch uint32
}

// Pushback tells the engine that the API of the task running with ctx pushed back (throttled a call) even though
// the call then succeeded, retried by the API's client: the engine slows the task's class down as it does when
// an attempt fails with a retryable error. Call it from the client's retry hook. Outside a task, or after its
// run ended, it does nothing. It never blocks.
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
