package nodetasks

import (
	"bytes"
	"context"
	"log/slog"
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
			case tt.wantErr != "" && tt.actual != nil && !markedTerminal(err):
				// What is on the node is in the way, and only a person can remove it: nodeup does not retry it.
				t.Errorf("CheckChanges error = %v is not marked engine.Terminal", err)
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

// secretFiles is a graph of two files that hold a secret: a key, and a configuration in a directory kubeup
// makes.
func secretFiles(secret string) func() *engine.Graph[*Node] {
	return func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &File{Path: "/srv/kubernetes/etcd/main-a-peer.key", SecretContents: ptr(engine.NewSecret(secret + "-key\n")),
			Mode: ptr(os.FileMode(0o600)), Owner: ptr("0"), Group: ptr("0")})
		engine.Add(g, &File{Path: "/var/lib/kube-proxy/kubeconfig", SecretContents: ptr(engine.NewSecret("users:\n- key: " + secret + "-kubeconfig\n")),
			Mode: ptr(os.FileMode(0o600))})
		return g
	}
}

// TestFileSecretContents: a file with SecretContents is written whole, with its mode, and no plan (text or
// JSON) nor log line shows what it holds, before or after.
func TestFileSecretContents(t *testing.T) {
	const secret = "SENTINEL-SECRET-51c2e8"
	ctx := context.Background()
	n := testNode(t, nil)
	var logs bytes.Buffer
	run := func(build func() *engine.Graph[*Node], target engine.Target) *engine.Plan {
		t.Helper()
		res, err := engine.Run(ctx, build(), n, engine.Options{Target: target,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		return res.Plan
	}
	check := func(step string, p *engine.Plan, wantText ...string) {
		t.Helper()
		var text, js bytes.Buffer
		if err := p.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{text.String(), js.String(), logs.String()} {
			if strings.Contains(out, secret) || strings.Contains(out, "drifted") {
				t.Errorf("%s: the secret is in the output:\n%s", step, out)
			}
		}
		for _, want := range wantText {
			if !strings.Contains(text.String(), want) {
				t.Errorf("%s: the plan does not say %q:\n%s", step, want, text.String())
			}
		}
	}

	check("dry run", run(secretFiles(secret), engine.DryRun), "File//srv/kubernetes/etcd/main-a-peer.key", "SecretContents    (sensitive)", "Mode              -rw-------")
	check("apply", run(secretFiles(secret), engine.Apply))
	for p, want := range map[string]string{
		"srv/kubernetes/etcd/main-a-peer.key": secret + "-key\n",
		"var/lib/kube-proxy/kubeconfig":       "users:\n- key: " + secret + "-kubeconfig\n",
	} {
		b, err := os.ReadFile(filepath.Join(n.Root, p))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
		st, err := os.Stat(filepath.Join(n.Root, p))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", p, st.Mode(), err)
		}
	}
	if p := run(secretFiles(secret), engine.DryRun); !p.Empty() {
		check("dry run after apply", p)
		t.Error("the dry run after the apply plans changes")
	}

	// Drift, to another secret: the change is planned and made, and neither secret is shown.
	key := filepath.Join(n.Root, "srv/kubernetes/etcd/main-a-peer.key")
	if err := os.WriteFile(key, []byte("drifted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	drift := run(secretFiles(secret), engine.DryRun)
	if len(drift.Changes) != 1 {
		t.Errorf("after drift: %d changes, want 1", len(drift.Changes))
	}
	check("dry run after drift", drift, "SecretContents    (sensitive) -> (sensitive)")
	check("apply after drift", run(secretFiles(secret), engine.Apply))
	if b, _ := os.ReadFile(key); string(b) != secret+"-key\n" {
		t.Errorf("after drift, the key holds %q", b)
	}
	enginetest.ApplyThenNoChanges(t, ctx, n, secretFiles(secret))
}

func TestFileSecretContentsValidate(t *testing.T) {
	s := ptr(engine.NewSecret("k"))
	for _, tt := range []struct {
		name    string
		f       *File
		wantErr string
	}{
		{"both contents", &File{Path: "/a", Contents: ptr("k"), SecretContents: s}, "fields Contents and SecretContents both set"},
		{"a directory", &File{Path: "/a", Type: ptr(TypeDirectory), SecretContents: s}, "field Contents is for a file"},
		{"a symlink", &File{Path: "/a", Type: ptr(TypeSymlink), Target: ptr("/b"), SecretContents: s}, "a symlink has neither Contents nor Mode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.f.Validate(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
