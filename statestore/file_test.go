package statestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// envIncrementHelper makes the test binary a helper process for TestFileWriteIfBetweenProcesses: it increments
// the counter in the store at $envIncrementHelper, $envIncrementCount times, with read-modify-WriteIf.
const (
	envIncrementHelper = "KUBEUP_STATESTORE_TEST_INCREMENT_STORE"
	envIncrementCount  = "KUBEUP_STATESTORE_TEST_INCREMENT_COUNT"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envIncrementHelper); url != "" {
		n, _ := strconv.Atoi(os.Getenv(envIncrementCount))
		if err := increment(context.Background(), url, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// increment adds 1 to the number in the object "counter", n times, retrying on conflicts.
func increment(ctx context.Context, url string, n int) error {
	st, err := Open(ctx, url)
	if err != nil {
		return err
	}
	for done := 0; done < n; {
		data, gen, err := st.Read(ctx, "counter")
		v := 0
		switch {
		case errors.Is(err, fs.ErrNotExist):
			gen = Absent
		case err != nil:
			return err
		default:
			if v, err = strconv.Atoi(string(data)); err != nil {
				return err
			}
		}
		_, err = st.WriteIf(ctx, "counter", []byte(strconv.Itoa(v+1)), gen)
		switch {
		case errors.Is(err, ErrConflict):
			continue
		case err != nil:
			return err
		}
		done++
	}
	return nil
}

// TestFileWriteIfBetweenProcesses runs read-modify-WriteIf loops in several processes on one store: no increment
// may be lost.
func TestFileWriteIfBetweenProcesses(t *testing.T) {
	const procs, each = 4, 50
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envIncrementHelper+"="+dir, envIncrementCount+"="+strconv.Itoa(each))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper process: %v", err)
		}
	}
	got, err := mustOpen(t, dir).ReadFile(context.Background(), "counter")
	if err != nil || string(got) != strconv.Itoa(procs*each) {
		t.Errorf("counter = %q (%v), want %d", got, err, procs*each)
	}
}

// TestFileWriteIfConcurrent has many goroutines, each with its own store, write with the same precondition at
// once: exactly one wins.
func TestFileWriteIfConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const writers = 32
	// Each round writes content no earlier round wrote: a write of the same content keeps the generation (it is
	// the content's hash), and a second writer holding that generation would rightly win too.
	race := func(round string, ifGen Generation) (winners []int) {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			start = make(chan struct{})
		)
		for i := range writers {
			wg.Go(func() {
				st := mustOpen(t, dir)
				<-start
				_, err := st.WriteIf(ctx, "demo/config", []byte(round+strconv.Itoa(i)), ifGen)
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, i)
					mu.Unlock()
				case !errors.Is(err, ErrConflict):
					t.Errorf("writer %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("winners %v, want exactly one", winners)
		}
		if got, _ := mustOpen(t, dir).ReadFile(ctx, "demo/config"); string(got) != round+strconv.Itoa(winners[0]) {
			t.Errorf("object holds %q, want the winner's %d", got, winners[0])
		}
		return winners
	}
	race("create ", Absent)
	_, gen, err := mustOpen(t, dir).Read(ctx, "demo/config")
	if err != nil {
		t.Fatal(err)
	}
	race("update ", gen)
}

func TestFileLayout(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state")
	st := mustOpen(t, "file://"+root)
	for _, p := range []string{"demo/config", "demo/instancegroup/nodes", "demo/nodeup/nodes", "keep/config"} {
		if err := st.WriteFile(ctx, p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(root, "demo", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("object mode %v, want 0600", fi.Mode().Perm())
	}
	if got := tree(t, root); !cmp.Equal(got, []string{"demo/config", "demo/instancegroup/nodes", "demo/nodeup/nodes", "keep/config"}) {
		t.Errorf("files under the root: %q (temporary files left?)", got)
	}

	// A directory is not an object.
	if _, err := st.ReadFile(ctx, "demo"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a directory = %v, want fs.ErrNotExist", err)
	}
	if err := st.Delete(ctx, "demo"); err != nil {
		t.Errorf("Delete of a directory = %v, want nil (no such object)", err)
	}
	if err := st.WriteFile(ctx, "demo/config/x", nil); err == nil {
		t.Error("writing under an object succeeded")
	}

	// Deleting a cluster's objects leaves no directory behind, and never removes the root.
	for _, p := range []string{"demo/config", "demo/instancegroup/nodes", "demo/nodeup/nodes"} {
		if err := st.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := tree(t, root); !cmp.Equal(got, []string{"keep/config"}) {
		t.Errorf("after deleting demo/*: %q", got)
	}
	if err := st.Delete(ctx, "keep/config"); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("after deleting everything: %q, want an empty root", got)
	}
}

// tree lists the files and empty directories under root, relative, sorted.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == root {
			return err
		}
		rel, _ := filepath.Rel(root, name)
		if !d.IsDir() {
			got = append(got, filepath.ToSlash(rel))
		} else if entries, _ := os.ReadDir(name); len(entries) == 0 {
			got = append(got, filepath.ToSlash(rel)+"/")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	return got
}

func TestFileCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := mustOpen(t, t.TempDir())
	if err := st.WriteFile(ctx, "demo/config", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteFile with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := st.ReadFile(context.Background(), "demo/config"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after a cancelled write, ReadFile = %v, want fs.ErrNotExist", err)
	}
}
