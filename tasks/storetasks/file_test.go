package storetasks_test

import (
	"context"
	"kubeup.dev/kubeup/tasks/storetasks/storetest"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/storetasks"
)

// memStore is an in-memory state store (storetest); the real ones are tested in statestore.
type memStore = storetest.MemStore

type world struct{ store *memStore }

func (w *world) StateStore() storetasks.Store { return w.store }

func ptr[T any](v T) *T { return &v }

func TestFileApplyThenNoChanges(t *testing.T) {
	w := &world{store: &memStore{Objects: map[string]string{}}}
	build := func() *engine.Graph[*world] {
		g := engine.NewGraph[*world]()
		conf := engine.Add(g, &storetasks.File[*world]{Path: "c/nodeup/nodes", Contents: ptr("a: 1\n")})
		engine.Add(g, &storetasks.File[*world]{Path: "c/nodeup/nodes.sha256", Contents: ptr("abc\n"), After: []engine.Task{conf}})
		return g
	}
	plan := enginetest.ApplyThenNoChanges(t, context.Background(), w, build)
	if len(plan.Changes) != 2 {
		t.Errorf("first dry run: %d changes, want 2", len(plan.Changes))
	}
	if got := w.store.Objects["c/nodeup/nodes"]; got != "a: 1\n" {
		t.Errorf("store holds %q", got)
	}

	// A changed object is rewritten, and only that one.
	w.store.Objects["c/nodeup/nodes"] = "a: 2\n"
	before := w.store.Writes
	if _, err := engine.Run(context.Background(), build(), w, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	if w.store.Writes != before+1 || w.store.Objects["c/nodeup/nodes"] != "a: 1\n" {
		t.Errorf("after drift: %d writes (want 1), contents %q", w.store.Writes-before, w.store.Objects["c/nodeup/nodes"])
	}
}

func TestFileDeps(t *testing.T) {
	conf := &storetasks.File[*world]{Path: "a", Contents: ptr("")}
	enginetest.CheckDeps(t, &storetasks.File[*world]{Path: "b", Contents: ptr(""), After: []engine.Task{conf}})
}

func TestFileRequiresContents(t *testing.T) {
	f := &storetasks.File[*world]{Path: "a"}
	if err := f.CheckChanges(nil, f, f); err == nil {
		t.Error("CheckChanges accepted a file without contents")
	}
}
