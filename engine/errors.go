package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"kubeup.dev/kubeup/internal/errclass"
	"sort"
	"strings"
	"syscall"
)

// Class says how the executor treats a task's error: ClassTerminal, ClassNotReady or ClassRetryable. The classes
// and ClassError live in internal/errclass, a leaf that the state store (which does not import the engine) uses
// too; these are the same types and values.
type Class = errclass.Class

// The classes (see errclass).
const (
	ClassTerminal  = errclass.ClassTerminal
	ClassNotReady  = errclass.ClassNotReady
	ClassRetryable = errclass.ClassRetryable
)

// ClassError carries a class with an error. Build one with NotReady, Retryable or Terminal.
type ClassError = errclass.ClassError

// NotReady marks err as "try again later".
func NotReady(err error) error { return errclass.NotReady(err) }

// Retryable marks err as a transient API failure.
func Retryable(err error) error { return errclass.Retryable(err) }

// Terminal marks err as final, even where a wrapped error says otherwise.
func Terminal(err error) error { return errclass.Terminal(err) }

// ClassOf returns the class of the outermost ClassError in err's chain; ClassTerminal when there is none.
func ClassOf(err error) Class { return errclass.ClassOf(err) }

// ErrAccessDenied is what a provider wraps its permission errors with. A task with lifecycle
// WarnIfInsufficientAccess turns such an error into a warning.
var ErrAccessDenied = errclass.ErrAccessDenied

// FileError classifies an error of the filesystem for the engine, as every task that writes files needs: a
// permission problem is access denied (a warning under lifecycle WarnIfInsufficientAccess), a busy resource
// (EBUSY, EAGAIN) is worth another try, anything else is as it is (terminal). nil stays nil.
func FileError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", ErrAccessDenied, err)
	case errors.Is(err, syscall.EBUSY), errors.Is(err, syscall.EAGAIN):
		return Retryable(err)
	}
	return err
}

// ErrNotFound is returned for a task with lifecycle ExistsAndValidates or ExistsAndWarnIfChanges whose object
// does not exist.
var ErrNotFound = errors.New("does not exist")

// TaskError is the failure of one task, or the reason it was skipped or did not finish.
type TaskError struct {
	Key     Key
	Err     error
	Skipped bool // not run, because a dependency failed or the run was cancelled
	// Interrupted: the run was cancelled while the task rendered, so its change may be partly made.
	Interrupted bool
}

func (e *TaskError) Error() string {
	switch {
	case e.Skipped:
		return fmt.Sprintf("%s: skipped: %v", e.Key, e.Err)
	case e.Interrupted:
		return fmt.Sprintf("%s: interrupted while making its change, which may be partly made (run again to finish it): %v", e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Key, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }

// RunError is what Run returns when any task failed or did not run: every failed task with its cause, then every
// task interrupted while it made its change (the run was cancelled; the change may be partly made), then every
// skipped one (not run: a dependency failed, or the run was cancelled before it started or while it read the
// world).
type RunError struct {
	Failed      []*TaskError
	Interrupted []*TaskError
	Skipped     []*TaskError
}

func (e *RunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d task(s) failed", len(e.Failed))
	if len(e.Interrupted) > 0 {
		fmt.Fprintf(&b, ", %d interrupted while making their change", len(e.Interrupted))
	}
	if len(e.Skipped) > 0 {
		fmt.Fprintf(&b, ", %d skipped", len(e.Skipped))
	}
	b.WriteString(":")
	for _, list := range [][]*TaskError{e.Failed, e.Interrupted, e.Skipped} {
		for _, te := range list {
			b.WriteString("\n  ")
			b.WriteString(te.Error())
		}
	}
	return b.String()
}

// Unwrap exposes each task's error to errors.Is and errors.As.
func (e *RunError) Unwrap() []error {
	errs := make([]error, 0, len(e.Failed)+len(e.Interrupted)+len(e.Skipped))
	for _, list := range [][]*TaskError{e.Failed, e.Interrupted, e.Skipped} {
		for _, te := range list {
			errs = append(errs, te)
		}
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
