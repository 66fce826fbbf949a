package engine

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

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

// ErrNotFound is returned for a task with lifecycle ExistsAndValidates or ExistsAndWarnIfChanges whose object
// does not exist.
var ErrNotFound = errors.New("does not exist")

// TaskError is the failure of one task, or the reason it was skipped.
type TaskError struct {
	Key     Key
	Err     error
	Skipped bool // not run, because a dependency failed or the run was cancelled
}

func (e *TaskError) Error() string {
	if e.Skipped {
		return fmt.Sprintf("%s: skipped: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Key, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }

// RunError is what Run returns when any task failed: every failed task with its cause, then every skipped one.
type RunError struct {
	Failed  []*TaskError
	Skipped []*TaskError
}

func (e *RunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d task(s) failed", len(e.Failed))
	if len(e.Skipped) > 0 {
		fmt.Fprintf(&b, ", %d skipped", len(e.Skipped))
	}
	b.WriteString(":")
	for _, list := range [][]*TaskError{e.Failed, e.Skipped} {
		for _, te := range list {
			b.WriteString("\n  ")
			b.WriteString(te.Error())
		}
	}
	return b.String()
}

// Unwrap exposes each task's error to errors.Is and errors.As.
func (e *RunError) Unwrap() []error {
	errs := make([]error, 0, len(e.Failed)+len(e.Skipped))
	for _, te := range e.Failed {
		errs = append(errs, te)
	}
	for _, te := range e.Skipped {
		errs = append(errs, te)
	}
	return errs
}

func sortTaskErrors(errs []*TaskError) {
	sort.Slice(errs, func(i, j int) bool { return keyLess(errs[i].Key, errs[j].Key) })
}

func keyLess(a, b Key) bool {
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.Name < b.Name
}

// ValidationError lists every problem that stops a graph from running. Nothing was read or changed.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid task graph: " + e.Problems[0]
	}
	return "invalid task graph:\n  " + strings.Join(e.Problems, "\n  ")
}
