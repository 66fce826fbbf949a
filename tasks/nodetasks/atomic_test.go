package nodetasks

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A write removes the temporary files that killed runs left of the file it writes, of our naming and held by no
// writer, and nothing else: not the temporary files of the other files of its directory, which their own tasks
// may be writing (TestWriteAtomicLeavesSiblingsTemps).
func TestWriteAtomicRemovesStaleTemps(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, map[string]string{
		"/etc/kubernetes/.kubelet.conf.tmp-3920481": "half a kubeconfig", // killed runs'
		"/etc/kubernetes/.kubelet.conf.tmp-17":      "",
		"/etc/kubernetes/.kubelet.conf.tmp-42":      "a live writer's", // locked below
		"/etc/kubernetes/.kubelet.conf.tmp-abc":     "",                // not our naming
		"/etc/kubernetes/kubelet.conf.tmp-1":        "",
		"/etc/kubernetes/.kubelet.conf.tmp-5":       "->kubelet.conf",
		"/etc/kubernetes/.kubelet.conf.tmp-6/x":     "",
		"/etc/kubernetes/.etcd.manifest.tmp-18":     "", // another file's: removed by a write of that file
		"/etc/other/.kubelet.conf.tmp-7":            "", // another directory: cleaned by a write there
	})
	dir := filepath.Join(n.Root, "etc/kubernetes")
	held, err := os.Open(filepath.Join(dir, ".kubelet.conf.tmp-42"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	if err := n.writeFileAtomic(ctx, "/etc/kubernetes/kubelet.conf", []byte("x"), 0o600, -1, -1); err != nil {
		t.Fatal(err)
	}
	want := []string{".etcd.manifest.tmp-18", ".kubelet.conf.tmp-42", ".kubelet.conf.tmp-5", ".kubelet.conf.tmp-6", ".kubelet.conf.tmp-abc",
		"kubelet.conf", "kubelet.conf.tmp-1"}
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("after the write, %s holds %q, want %q", dir, got, want)
	}
	if got := dirNames(t, filepath.Join(n.Root, "etc/other")); len(got) != 1 {
		t.Errorf("a write elsewhere cleaned /etc/other: %q", got)
	}
	if err := n.writeFileAtomic(ctx, "/etc/kubernetes/etcd.manifest", []byte("x"), 0o600, -1, -1); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); slices.Contains(got, ".etcd.manifest.tmp-18") {
		t.Errorf("a write of etcd.manifest left its leftover: %q", got)
	}
}

// TestWriteAtomicLeavesSiblingsTemps: a task that writes a file in a directory where another task has just
// created its temporary file, and not locked it yet, leaves it alone, and does not log that it removed a
// leftover of an earlier run. Removing it sent that writer round again, and on a fresh root logged "removed a
// temporary file left by an earlier run" of a run that never was.
func TestWriteAtomicLeavesSiblingsTemps(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, map[string]string{"/etc/kubernetes/.etcd.manifest.tmp-1234": ""}) // created, not locked yet
	if err := n.writeFileAtomic(ctx, "/etc/kubernetes/kubelet.conf", []byte("x"), 0o600, -1, -1); err != nil {
		t.Fatal(err)
	}
	want := []string{".etcd.manifest.tmp-1234", "kubelet.conf"}
	if got := dirNames(t, filepath.Join(n.Root, "etc/kubernetes")); !slices.Equal(got, want) {
		t.Errorf("after the write of kubelet.conf, /etc/kubernetes holds %q, want %q", got, want)
	}
}

func TestIsTempOf(t *testing.T) {
	for name, want := range map[string]bool{
		".kubelet.conf.tmp-1": true, ".kubelet.conf.tmp-4294967295": true,
		".kubelet.conf.tmp-": false, ".kubelet.conf.tmp-1a": false, "kubelet.conf.tmp-1": false,
		".kubelet.conf.tmp-1.tmp-2": false, ".other.conf.tmp-1": false, ".kubelet.conf.bak.tmp-1": false,
	} {
		if got := isTempOf(name, "kubelet.conf"); got != want {
			t.Errorf("isTempOf(%q, kubelet.conf) = %v, want %v", name, got, want)
		}
	}
}

// A writer in the middle of its write keeps its temporary file while others write in the same directory.
func TestWriteAtomicKeepsLiveTemps(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- n.writeAtomic(ctx, "/usr/local/bin/kubelet", 0o755, -1, -1, func(w io.Writer) error {
			if _, err := io.WriteString(w, "first half "); err != nil {
				return err
			}
			close(started)
			<-release
			_, err := io.WriteString(w, "second half")
			return err
		})
	}()
	<-started
	if err := n.writeFileAtomic(ctx, "/usr/local/bin/other", []byte("x"), 0o755, -1, -1); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the slow writer: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(n.Root, "usr/local/bin/kubelet")); err != nil || string(b) != "first half second half" {
		t.Errorf("kubelet = %q, %v", b, err)
	}
}

// Many writers in one directory: none loses its temporary file to another's cleaning, none is left behind.
func TestWriteAtomicConcurrent(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8*40)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				p := fmt.Sprintf("/etc/kubernetes/f%d", (w+i)%5)
				if err := n.writeFileAtomic(ctx, p, []byte(strings.Repeat("x", i)), 0o644, -1, -1); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, name := range dirNames(t, filepath.Join(n.Root, "etc/kubernetes")) {
		if strings.HasPrefix(name, ".") {
			t.Errorf("left behind: %s", name)
		}
	}
}
