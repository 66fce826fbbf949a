package nodetasks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/golden"
)

func ptr[T any](v T) *T { return &v }

func TestFileFind(t *testing.T) {
	n := testNode(t, map[string]string{
		"/etc/a.conf":  "hello\n",
		"/etc/b.conf":  "",
		"/etc/link":    "->/etc/a.conf",
		"/etc/dir/x":   "",
		"/etc/escapes": "->../..",
	})
	mode := func(p string, m os.FileMode) {
		if err := os.Chmod(filepath.Join(n.Root, p), m); err != nil {
			t.Fatal(err)
		}
	}
	mode("/etc/a.conf", 0o640)
	if err := os.Lchown(filepath.Join(n.Root, "etc/a.conf"), meUID, meGID); err != nil {
		t.Fatal(err)
	}
	mode("/etc/dir", 0o750)
	tests := []struct {
		name    string
		task    *File
		want    *File
		wantErr string
	}{
		{name: "absent", task: &File{Path: "/etc/none"}},
		{name: "file with contents, owner by name", task: &File{Path: "/etc/a.conf", Contents: ptr(""), Owner: ptr("me"), Group: ptr("me")},
			want: &File{Path: "/etc/a.conf", Type: ptr("file"), Contents: ptr("hello\n"), Mode: ptr(os.FileMode(0o640)), Owner: ptr("me"), Group: ptr("me")}},
		{name: "owner by number, contents not read", task: &File{Path: "/etc/b.conf", Owner: ptr("0")},
			want: &File{Path: "/etc/b.conf", Type: ptr("file"), Mode: ptr(os.FileMode(0o644)), Owner: ptr(strconv.Itoa(os.Getuid()))}},
		{name: "directory", task: &File{Path: "/etc/dir"},
			want: &File{Path: "/etc/dir", Type: ptr("directory"), Mode: ptr(os.FileMode(0o750))}},
		{name: "symlink, not followed", task: &File{Path: "/etc/link"},
			want: &File{Path: "/etc/link", Type: ptr("symlink"), Target: ptr("/etc/a.conf")}},
		{name: "through a symlink that escapes", task: &File{Path: "/etc/escapes/etc/passwd"}, wantErr: "escapes the node root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.task.Find(context.Background(), n)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Find error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".found" }, cmp.Ignore()),
				cmp.AllowUnexported(File{})); diff != "" {
				t.Errorf("Find (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFileCheckChanges(t *testing.T) {
	dir := &File{Path: "/d", Type: ptr("directory"), found: &fileStat{typ: "directory"}}
	sock := &File{Path: "/s", Type: ptr("socket"), found: &fileStat{typ: "socket"}}
	tests := []struct {
		name     string
		actual   *File
		expected *File
		wantErr  string
	}{
		{name: "file", expected: &File{Path: "/etc/x", Contents: ptr("x")}},
		{name: "relative path", expected: &File{Path: "etc/x"}, wantErr: `field Path: "etc/x" is not an absolute path`},
		{name: "unclean path", expected: &File{Path: "/etc//x"}, wantErr: `is not clean: write "/etc/x"`},
		{name: "unknown type", expected: &File{Path: "/x", Type: ptr("fifo")}, wantErr: `field Type: "fifo" is not one of`},
		{name: "symlink without target", expected: &File{Path: "/x", Type: ptr("symlink")}, wantErr: "field Target is required"},
		{name: "symlink with mode", expected: &File{Path: "/x", Type: ptr("symlink"), Target: ptr("/y"), Mode: ptr(os.FileMode(0o644))},
			wantErr: "a symlink has neither Contents nor Mode"},
		{name: "target on a file", expected: &File{Path: "/x", Target: ptr("/y")}, wantErr: "field Target is for a symlink"},
		{name: "contents on a directory", expected: &File{Path: "/x", Type: ptr("directory"), Contents: ptr("")},
			wantErr: "field Contents is for a file"},
		{name: "directory replaced by a file", actual: dir, expected: &File{Path: "/d", Contents: ptr("x")},
			wantErr: "/d is a directory, not a file: kubeup does not remove directories"},
		{name: "socket", actual: sock, expected: &File{Path: "/s", Contents: ptr("x")}, wantErr: "/s is a socket, not a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.expected.CheckChanges(tt.actual, tt.expected, tt.expected)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckChanges: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckChanges error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// files is a graph of every kind of File, with owners by name and by number.
func files() *engine.Graph[*Node] {
	g := engine.NewGraph[*Node]()
	dir := engine.Add(g, &File{Path: "/etc/kubernetes", Type: ptr("directory"), Mode: ptr(os.FileMode(0o750)), Owner: ptr("me")})
	conf := engine.Add(g, &File{Path: "/etc/kubernetes/kubelet.conf", Contents: ptr("a: 1\nb: 2\n"),
		Mode: ptr(os.FileMode(0o600)), Owner: ptr("me"), Group: ptr("me"), After: []engine.Task{dir}})
	engine.Add(g, &File{Path: "/etc/kubernetes/current", Type: ptr("symlink"), Target: ptr("kubelet.conf"), After: []engine.Task{conf}})
	engine.Add(g, &File{Path: "/var/lib/kubelet/empty", Contents: ptr(""), Group: ptr(strconv.Itoa(meGID))})
	return g
}

func TestFileApplyThenNoChanges(t *testing.T) {
	n := testNode(t, map[string]string{"/etc/kubernetes/current": "stale contents"})
	enginetest.ApplyThenNoChanges(t, context.Background(), n, files)

	b, err := os.ReadFile(filepath.Join(n.Root, "etc/kubernetes/current")) // through the symlink
	if err != nil || string(b) != "a: 1\nb: 2\n" {
		t.Errorf("read through the symlink: %q, %v", b, err)
	}
	st, err := os.Stat(filepath.Join(n.Root, "etc/kubernetes/kubelet.conf"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("kubelet.conf: mode %v, %v; want 0600", st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Join(n.Root, "etc/kubernetes"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a temporary file is left behind: %s", e.Name())
		}
	}
}

// After drift, the dry run shows the contents as a line diff, and the mode and type that changed.
func TestFileDriftReport(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	if _, err := engine.Run(ctx, files(), n, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(n.Root, "etc/kubernetes/kubelet.conf")
	if err := os.WriteFile(conf, []byte("a: 1\nb: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(n.Root, "etc/kubernetes/current")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(ctx, files(), n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	res.Plan.WriteText(&report)
	golden.Assert(t, "testdata/file-drift.golden", report.Bytes())

	enginetest.ApplyThenNoChanges(t, ctx, n, files)
}

func TestFileDeps(t *testing.T) {
	enginetest.CheckDeps(t, &File{Path: "/x", After: []engine.Task{&File{Path: "/y"}}})
}
