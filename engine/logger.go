package engine

import (
	"context"
	"log/slog"
)

type attemptKey struct{}

// attempt is the context of one attempt of a task: the run's, and what it carries for the task: its logger,
// built only when the task logs (most tasks never do, and a graph of 100,000 no-op tasks should not pay for
// 100,000 loggers), and where a push back of its API goes (Pushback). Being the context itself keeps a task's
// context at one allocation.
type attempt struct {
	context.Context
	run   *runShared
	key   Task
	class int32 // its index in the run's classes
	epoch uint32
}

// Value answers attemptKey{} with the attempt itself, and anything else as the run's context does.
func (a *attempt) Value(key any) any {
	if key == (attemptKey{}) {
		return a
	}
	return a.Context.Value(key)
}

// runShared is what every attempt of one run shares.
type runShared struct {
	logger  *slog.Logger
	pushed  chan<- pushback
	stopped <-chan struct{}
}

// Logger returns the logger of the task running with ctx, which logs with task=<key>. Outside a task it returns
// slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	if a, ok := ctx.Value(attemptKey{}).(*attempt); ok {
		return a.run.logger.With("task", a.key.Key().String())
	}
	return slog.Default()
}
