// Package enginetest holds the checks every task package's tests reuse: apply then dry-run with no changes
// left, and "every task-typed field is a dependency". It imports the engine, go-cmp and the standard library.
package enginetest

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
)

// ApplyThenNoChanges runs, each time on a fresh graph from build:
//  1. a dry run, the announcement;
//  2. an apply, which must change exactly what the dry run announced;
//  3. a dry run, which must report no changes (no perpetual diff);
//  4. a second apply, which must change nothing.
//
// It fails t on any error or difference and returns the applied plan.
func ApplyThenNoChanges[C any](t testing.TB, ctx context.Context, world C, build func() *engine.Graph[C]) *engine.Plan {
	t.Helper()
	run := func(step string, target engine.Target) *engine.Plan {
		t.Helper()
		res, err := engine.Run(ctx, build(), world, engine.Options{Target: target})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return res.Plan
	}
	announced := run("first dry run", engine.DryRun)
	applied := run("apply", engine.Apply)
	if diff := cmp.Diff(report(t, announced), report(t, applied)); diff != "" {
		t.Errorf("the apply changed something other than what the dry run announced (-announced +applied):\n%s", diff)
	}
	if again := run("dry run after apply", engine.DryRun); !again.Empty() {
		t.Errorf("dry run after apply reports changes (a perpetual diff):\n%s", report(t, again))
	}
	if second := run("second apply", engine.Apply); !second.Empty() {
		t.Errorf("second apply changed something:\n%s", report(t, second))
	}
	return applied
}

func report(t testing.TB, p *engine.Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.WriteText(&b); err != nil {
		t.Fatalf("writing report: %v", err)
	}
	return b.String()
}

var taskType = reflect.TypeFor[engine.Task]()

// CheckDeps fails t when a field of task holds a task (directly, or in a slice, array or map) that task.Deps()
// does not return. It is a test-time check only: the engine itself never infers dependencies from fields.
func CheckDeps(t testing.TB, task engine.Task) {
	t.Helper()
	listed := map[engine.Key]bool{}
	for _, d := range task.Deps() {
		if d != nil && !reflect.ValueOf(d).IsZero() {
			listed[d.Key()] = true
		}
	}
	v := reflect.ValueOf(task)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		t.Fatalf("%s: a task must be a pointer to a struct, got %T", task.Key(), task)
	}
	for i := 0; i < v.NumField(); i++ {
		if !v.Type().Field(i).IsExported() {
			continue // the engine's contract is about exported, typed fields
		}
		name := v.Type().Field(i).Name
		for _, ref := range tasksIn(v.Field(i)) {
			if !listed[ref.Key()] {
				t.Errorf("%s: field %s holds %s, which Deps() does not return", task.Key(), name, ref.Key())
			}
		}
	}
}

// tasksIn returns the non-nil tasks a field holds.
func tasksIn(v reflect.Value) []engine.Task {
	switch {
	case !v.IsValid():
		return nil
	case v.Type().Implements(taskType):
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			return nil
		}
		return []engine.Task{v.Interface().(engine.Task)}
	}
	var out []engine.Task
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			out = append(out, tasksIn(v.Index(i))...)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			out = append(out, tasksIn(it.Value())...)
		}
	}
	return out
}

// TaskList renders a graph's tasks, sorted by key, each with the keys of its dependencies (checked with
// CheckDeps): what a graph builder's golden file holds.
func TaskList(t *testing.T, tasks []engine.Task) []byte {
	t.Helper()
	lines := make([]string, 0, len(tasks))
	for _, task := range tasks {
		CheckDeps(t, task)
		line := task.Key().String()
		var deps []string
		for _, d := range task.Deps() {
			deps = append(deps, d.Key().String())
		}
		if len(deps) > 0 {
			slices.Sort(deps)
			line += "\n    after " + strings.Join(deps, "\n    after ")
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}
