//go:build unix

package statestore

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFileStaleTemporaryFiles: a killed writer leaves its temporary file (.<name>.tmp-<n>) behind. The next
// write in that directory removes it, and deleting a cluster's objects leaves no directory, even one that holds
// only such files; a temporary file that a live writer holds (flocked) is never touched.
func TestFileStaleTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state")
	st := mustOpen(t, "file://"+root)
	for _, p := range []string{"demo/config", "demo/nodeup/a"} {
		if err := st.WriteFile(ctx, p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	plant := func(p string) string {
		t.Helper()
		name := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	plant("demo/.config.tmp-123")         // killed while replacing config
	plant("demo/nodeup/.a.tmp-456")       // killed while replacing nodeup/a
	plant("demo/instancegroup/.x.tmp-78") // killed during the first write of a directory
	plant("demo/.notes")                  // not of our naming: kept
	live, err := os.Open(plant("demo/.live.tmp-999"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := syscall.Flock(int(live.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	if err := st.WriteFile(ctx, "demo/config", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	want := []string{"demo/.live.tmp-999", "demo/.notes", "demo/config", "demo/instancegroup/.x.tmp-78", "demo/nodeup/.a.tmp-456", "demo/nodeup/a"}
	if diff := cmp.Diff(want, tree(t, root)); diff != "" {
		t.Errorf("after a write of demo/config (-want +got):\n%s", diff)
	}

	os.Remove(filepath.Join(root, "demo", ".notes"))
	for _, p := range []string{"demo/nodeup/a", "demo/config"} {
		if err := st.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"demo/.live.tmp-999"}, tree(t, root)); diff != "" {
		t.Errorf("after deleting demo's objects while a writer holds demo/.live.tmp-999 (-want +got):\n%s", diff)
	}

	live.Close() // the writer is gone: its file is stale now
	if err := st.WriteFile(ctx, "demo/config", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "demo/config"); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("after deleting everything: %q, want an empty root", got)
	}
}
