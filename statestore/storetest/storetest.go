// Package storetest holds the contract every state store must pass, whatever its scheme: a store's package runs
// Run against it in its tests.
package storetest

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"kubeup.dev/kubeup/statestore"
)

// MustOpen opens the store at url (statestore.Open), failing the test if it cannot.
func MustOpen(t *testing.T, url string) statestore.Store {
	t.Helper()
	st, err := statestore.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	return st
}

// Run checks the store contract (statestore.Store's documentation) against the stores open makes: open(t) sets up
// a fresh, empty store (a directory, a bucket in a fake) and returns a function that opens a client of it; a
// check may call that twice for two clients of the same store.
func Run(t *testing.T, open func(t *testing.T) func() statestore.Store) {
	ctx := context.Background()
	t.Run("read absent", func(t *testing.T) {
		st := open(t)()
		if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) ||
			!strings.Contains(err.Error(), st.URL()+"/demo/config") {
			t.Errorf("ReadFile(absent) = %v, want fs.ErrNotExist naming %s/demo/config", err, st.URL())
		}
		if _, _, err := st.Read(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read(absent) = %v, want fs.ErrNotExist", err)
		}
	})

	t.Run("write and read", func(t *testing.T) {
		st := open(t)()
		for _, data := range []string{"kind: Cluster\n", "", "\x00\xff binary", "kind: Cluster # v2\n"} {
			if err := st.WriteFile(ctx, "demo/config", []byte(data)); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			got, err := st.ReadFile(ctx, "demo/config")
			if err != nil || string(got) != data {
				t.Fatalf("ReadFile = %q, %v; want %q", got, err, data)
			}
			got, gen, err := st.Read(ctx, "demo/config")
			if err != nil || string(got) != data || gen == statestore.Absent {
				t.Fatalf("Read = %q, %q, %v; want %q and a generation", got, gen, err, data)
			}
		}
	})

	t.Run("create once", func(t *testing.T) {
		st := open(t)()
		gen, err := st.WriteIf(ctx, "demo/config", []byte("first"), statestore.Absent)
		if err != nil {
			t.Fatalf("WriteIf(Absent) on an absent object: %v", err)
		}
		if _, got, err := st.Read(ctx, "demo/config"); err != nil || got != gen {
			t.Errorf("Read gives generation %q, %v; WriteIf returned %q", got, err, gen)
		}
		_, err = st.WriteIf(ctx, "demo/config", []byte("second"), statestore.Absent)
		if !errors.Is(err, statestore.ErrConflict) || !strings.Contains(err.Error(), st.URL()+"/demo/config") {
			t.Errorf("second WriteIf(Absent) = %v, want ErrConflict naming the object", err)
		}
		if got, _ := st.ReadFile(ctx, "demo/config"); string(got) != "first" {
			t.Errorf("object holds %q, want %q", got, "first")
		}
	})

	t.Run("two operators", func(t *testing.T) {
		newClient := open(t)
		alice, bob := newClient(), newClient()
		if err := alice.WriteFile(ctx, "demo/config", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		_, genA, errA := alice.Read(ctx, "demo/config")
		_, genB, errB := bob.Read(ctx, "demo/config")
		if errA != nil || errB != nil || genA != genB {
			t.Fatalf("reads: %q, %v and %q, %v; want the same generation", genA, errA, genB, errB)
		}
		newGen, err := alice.WriteIf(ctx, "demo/config", []byte("alice"), genA)
		if err != nil {
			t.Fatalf("first WriteIf: %v", err)
		}
		if newGen == genA {
			t.Errorf("generation %q did not change on write", newGen)
		}
		if _, err := bob.WriteIf(ctx, "demo/config", []byte("bob"), genB); !errors.Is(err, statestore.ErrConflict) {
			t.Errorf("second WriteIf = %v, want ErrConflict", err)
		}
		if got, _ := bob.ReadFile(ctx, "demo/config"); string(got) != "alice" {
			t.Errorf("object holds %q, want the first writer's %q", got, "alice")
		}
		// The winner can go on from the generation it got.
		if _, err := alice.WriteIf(ctx, "demo/config", []byte("alice 2"), newGen); err != nil {
			t.Errorf("WriteIf with the generation WriteIf returned: %v", err)
		}
	})

	t.Run("precondition on an absent object", func(t *testing.T) {
		st := open(t)()
		if err := st.WriteFile(ctx, "demo/config", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		_, gen, err := st.Read(ctx, "demo/config")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, "demo/config"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.WriteIf(ctx, "demo/config", []byte("v2"), gen); !errors.Is(err, statestore.ErrConflict) {
			t.Errorf("WriteIf(gen) of a deleted object = %v, want ErrConflict", err)
		}
		if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after a refused WriteIf, ReadFile = %v, want fs.ErrNotExist", err)
		}
	})

	t.Run("list", func(t *testing.T) {
		st := open(t)()
		if got, err := st.List(ctx, ""); err != nil || len(got) != 0 {
			t.Errorf("List of an empty store = %q, %v", got, err)
		}
		all := []string{
			"demo/instancegroup/nodes", "demo/config", "demo2/config", "demo/nodeup/nodes.sha256",
			"demo/instancegroup/control-plane", "other/cluster-completed.spec", "demo/nodeup/nodes",
		}
		for _, p := range all {
			if err := st.WriteFile(ctx, p, []byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"", []string{
				"demo/config", "demo/instancegroup/control-plane", "demo/instancegroup/nodes", "demo/nodeup/nodes",
				"demo/nodeup/nodes.sha256", "demo2/config", "other/cluster-completed.spec",
			}},
			{"demo", []string{
				"demo/config", "demo/instancegroup/control-plane", "demo/instancegroup/nodes", "demo/nodeup/nodes",
				"demo/nodeup/nodes.sha256",
			}},
			{"demo/", []string{
				"demo/config", "demo/instancegroup/control-plane", "demo/instancegroup/nodes", "demo/nodeup/nodes",
				"demo/nodeup/nodes.sha256",
			}},
			{"demo/instancegroup", []string{"demo/instancegroup/control-plane", "demo/instancegroup/nodes"}},
			{"demo/config", nil}, // an object is not a directory
			{"dem", nil},
			{"absent", nil},
		} {
			got, err := st.List(ctx, tc.prefix)
			if err != nil {
				t.Errorf("List(%q): %v", tc.prefix, err)
				continue
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("List(%q) (-want +got):\n%s", tc.prefix, diff)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		st := open(t)()
		for _, p := range []string{"demo/config", "demo/instancegroup/nodes", "keep/config"} {
			if err := st.WriteFile(ctx, p, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"demo/config", "demo/instancegroup/nodes", "demo/config", "never/was"} {
			if err := st.Delete(ctx, p); err != nil {
				t.Errorf("Delete(%q): %v", p, err)
			}
		}
		if _, err := st.ReadFile(ctx, "demo/config"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Delete, ReadFile = %v, want fs.ErrNotExist", err)
		}
		if got, err := st.List(ctx, ""); err != nil || !cmp.Equal(got, []string{"keep/config"}) {
			t.Errorf("after Delete, List = %q, %v; want [keep/config]", got, err)
		}
	})

	t.Run("bad paths", func(t *testing.T) {
		st := open(t)()
		for _, p := range []string{"", "/demo/config", "demo//config", "../demo", "demo/../x", "demo/./config",
			".lock", "demo/.config", "demo/", `demo\config`} {
			checks := map[string]error{}
			_, checks["ReadFile"] = st.ReadFile(ctx, p)
			_, _, checks["Read"] = st.Read(ctx, p)
			checks["WriteFile"] = st.WriteFile(ctx, p, []byte("x"))
			_, checks["WriteIf"] = st.WriteIf(ctx, p, []byte("x"), statestore.Absent)
			checks["Delete"] = st.Delete(ctx, p)
			for op, err := range checks {
				if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "path") {
					t.Errorf("%s(%q) = %v, want a path error", op, p, err)
				}
			}
		}
		for _, p := range []string{"/demo", "../demo", "demo//x", ".hidden"} {
			if _, err := st.List(ctx, p); err == nil {
				t.Errorf("List(%q) succeeded, want a path error", p)
			}
		}
		if got, err := st.List(ctx, ""); err != nil || len(got) != 0 {
			t.Errorf("bad paths wrote %q (%v)", got, err)
		}
	})

	t.Run("check", func(t *testing.T) {
		st := open(t)()
		err := st.Check(ctx)
		if statestore.CreatesRoot(st) {
			if !errors.Is(err, statestore.ErrNoStore) || !strings.Contains(err.Error(), st.URL()+": the state store does not exist: no such directory") {
				t.Errorf("Check of a directory not yet made = %v, want ErrNoStore naming %s", err, st.URL())
			}
		} else if err != nil {
			t.Errorf("Check of an empty bucket = %v, want nil", err)
		}
		if err := st.WriteFile(ctx, "demo/config", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := st.Check(ctx); err != nil {
			t.Errorf("Check after a write = %v", err)
		}
	})
}
