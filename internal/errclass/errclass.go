// Package errclass holds the classes of errors the engine's executor acts on (terminal, not ready, retryable)
// and the access-denied sentinel: a leaf, so that a package the engine does not belong in (statestore, read by
// nodeup and protokube without the engine) classifies its errors with the same values. engine re-exports every
// name; tasks use those.
package errclass

import "errors"

// Class says how the executor treats a task's error.
type Class int

const (
	// ClassTerminal errors fail the task at once: a validation error, a missing permission, a bug. Unclassified
	// errors are terminal, so that a mistake is never retried for ten minutes.
	ClassTerminal Class = iota
	// ClassNotReady errors mean "not yet": a volume still attaching, a dependency's output not visible. The task
	// is retried with exponential backoff and jitter until its deadline.
	ClassNotReady
	// ClassRetryable errors are transient failures of an API (throttling, 5xx). The task is retried like a
	// not-ready one, and the concurrency of the task's API class is reduced.
	ClassRetryable
)

func (c Class) String() string {
	switch c {
	case ClassNotReady:
		return "not-ready"
	case ClassRetryable:
		return "retryable"
	}
	return "terminal"
}

// ClassError carries a class with an error. Build one with NotReady, Retryable or Terminal.
type ClassError struct {
	Class Class
	Err   error
}

func (e *ClassError) Error() string { return e.Err.Error() }
func (e *ClassError) Unwrap() error { return e.Err }

// NotReady marks err as "try again later".
func NotReady(err error) error { return &ClassError{Class: ClassNotReady, Err: err} }

// Retryable marks err as a transient API failure.
func Retryable(err error) error { return &ClassError{Class: ClassRetryable, Err: err} }

// Terminal marks err as final, even where a wrapped error says otherwise.
func Terminal(err error) error { return &ClassError{Class: ClassTerminal, Err: err} }

// ClassOf returns the class of the outermost ClassError in err's chain; ClassTerminal when there is none.
func ClassOf(err error) Class {
	var ce *ClassError
	if errors.As(err, &ce) {
		return ce.Class
	}
	return ClassTerminal
}

// ErrAccessDenied is what a provider wraps its permission errors with. A task with lifecycle
// WarnIfInsufficientAccess turns such an error into a warning.
var ErrAccessDenied = errors.New("access denied")
