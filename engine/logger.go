package engine

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

// taskLogger builds the task's logger only when the task logs: most tasks never do, and a graph of 100,000
// no-op tasks should not pay for 100,000 loggers.
type taskLogger struct {
	base *slog.Logger
	key  Task
}

// Logger returns the logger of the task running with ctx, which logs with task=<key>. Outside a task it returns
// slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	if tl, ok := ctx.Value(loggerKey{}).(*taskLogger); ok {
		return tl.base.With("task", tl.key.Key().String())
	}
	return slog.Default()
}
