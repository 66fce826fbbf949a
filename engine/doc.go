// Package engine runs graphs of idempotent tasks: the one engine behind `kubeup update cluster`, nodeup and
// protokube.
//
// A task is a plain struct whose fields say what should exist. It implements Resource[T, C] for its own pointer
// type T and the world C it converges (a cloud client, a node): Key, Deps, Find and CheckChanges; and, to be
// applied, Renderer[T, C]. Add puts tasks into a Graph; Run validates the graph (duplicate keys, missing
// dependencies, tasks that cannot render to the target, cycles) before touching anything, then runs it with a
// ready queue: a task starts as soon as its dependencies are done, within a global and per-API-class concurrency
// limit. The DryRun target records the changes instead of rendering them; the Plan prints them for people
// (WriteText) or programs (WriteJSON). Errors are terminal unless marked NotReady or Retryable, which are retried
// with backoff until the task's deadline.
//
// Comparison is field by field, driven by the `kubeup` struct tag (see the rules at the top of changes.go): a nil
// pointer in the expected task is "don't care"; "set", "nilempty" and "output" change how a field compares.
// Values of type Secret print as (sensitive) everywhere.
//
// The engine imports no cloud SDK and nothing from tasks/, model/ or the binaries; gonum is used inside for
// cycle diagnosis and never appears in the API.
package engine
