package engine

import (
	"context"
	"log/slog"
)

type attemptKey struct{}

// attempt is what the context of one attempt of a task carries: its logger, built only when the task logs (most
// tasks never do, and a graph of 100,000 no-op tasks should not pay for 100,000 loggers), and where a push back
// of its API goes (Pushback). One value per attempt keeps a task's context at one allocation.
type attempt struct {
	run   *runShared
	key   Task
	class int32 // its index in the run's classes
	epoch uint32
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
