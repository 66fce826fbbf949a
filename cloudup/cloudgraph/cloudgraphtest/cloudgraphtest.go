// Package cloudgraphtest holds what the tests of the cloud graph builders (each provider's BuildCloudGraph) share:
// the golden rendering of a graph's tasks. Only tests import it.
package cloudgraphtest

import (
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// TaskList renders a graph's tasks, sorted by key, each with the keys of its dependencies (checked with
// enginetest.CheckDeps): what a builder's golden file holds.
func TaskList(t *testing.T, tasks []engine.Task) []byte {
	t.Helper()
	lines := make([]string, 0, len(tasks))
	for _, task := range tasks {
		enginetest.CheckDeps(t, task)
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
