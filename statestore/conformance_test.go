package statestore_test

import (
	"path/filepath"
	"testing"

	"kubeup.dev/kubeup/statestore"
	"kubeup.dev/kubeup/statestore/storetest"
	"kubeup.dev/kubeup/tasks/storetasks"
)

var _ storetasks.Store = statestore.Store(nil) // interface guard: what the store tasks need

// TestConformance runs the store contract against the file:// store, opened by its bare-path form.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() statestore.Store {
		dir := filepath.Join(t.TempDir(), "state")
		return func() statestore.Store { return storetest.MustOpen(t, dir) }
	})
}
