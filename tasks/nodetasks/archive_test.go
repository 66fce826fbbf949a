package nodetasks

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// testTar returns a gzip'd tar of the headers, each regular file's contents its name.
func testTar(t *testing.T, hdrs ...tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Name))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			io.WriteString(tw, h.Name)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func reg(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755} }

func TestArchiveApplyThenNoChanges(t *testing.T) {
	archive := testTar(t, reg("bin/containerd"), reg("bin/ctr"), reg("bin/other"))
	srv, downloads := assetServer(t, map[string]string{"/c.tar.gz": archive})
	n := testNode(t, nil)
	build := func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &Archive{Name: "containerd", URL: srv.URL + "/c.tar.gz", SHA256: sha(archive),
			Members: map[string]string{"bin/containerd": "/usr/local/bin/containerd", "bin/ctr": "/usr/local/bin/ctr"}})
		return g
	}
	enginetest.ApplyThenNoChanges(t, context.Background(), n, build)
	if got := downloads.Load(); got != 1 {
		t.Errorf("downloads = %d, want 1: the record is what a later run checks", got)
	}
	for p, want := range map[string]string{"usr/local/bin/containerd": "bin/containerd", "usr/local/bin/ctr": "bin/ctr"} {
		if b, err := os.ReadFile(filepath.Join(n.Root, p)); err != nil || string(b) != want {
			t.Errorf("/%s = %q, %v; want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"usr/local/bin/other", "var/lib/kubeup/assets/containerd.tar.gz"} {
		if _, err := os.Lstat(filepath.Join(n.Root, p)); err == nil {
			t.Errorf("/%s exists", p)
		}
	}
	// A member removed on the node is unpacked again.
	if err := os.Remove(filepath.Join(n.Root, "usr/local/bin/ctr")); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(context.Background(), build(), n, engine.Options{Target: engine.Apply})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Empty() || downloads.Load() != 2 {
		t.Errorf("a removed member: plan empty %v, downloads %d; want a change and a second download", res.Plan.Empty(), downloads.Load())
	}
}

// TestArchiveRefuses: an archive whose named member is a link, a device or a directory, one with a member that
// climbs out with "..", one that lacks a member, and one whose sha256 is wrong install nothing.
func TestArchiveRefuses(t *testing.T) {
	members := map[string]string{"bin/containerd": "/usr/local/bin/containerd", "bin/ctr": "/usr/local/bin/ctr"}
	tests := []struct {
		name    string
		archive string
		sha     string
		wantErr string
	}{
		{name: "symlink", archive: testTar(t, reg("bin/containerd"), tar.Header{Name: "bin/ctr", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}),
			wantErr: "member bin/ctr is a symbolic link, not a regular file"},
		{name: "hard link", archive: testTar(t, reg("bin/containerd"), tar.Header{Name: "bin/ctr", Typeflag: tar.TypeLink, Linkname: "bin/containerd"}),
			wantErr: "member bin/ctr is a hard link"},
		{name: "device", archive: testTar(t, reg("bin/containerd"), tar.Header{Name: "./bin/ctr", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
			wantErr: "member bin/ctr is a device"},
		{name: "traversal", archive: testTar(t, reg("bin/containerd"), reg("bin/ctr"), reg("../../etc/cron.d/x")),
			wantErr: `member "../../etc/cron.d/x" names a path outside the archive`},
		{name: "missing member", archive: testTar(t, reg("bin/containerd")), wantErr: "has no member bin/ctr"},
		{name: "twice", archive: testTar(t, reg("bin/containerd"), reg("bin/ctr"), reg("./bin/ctr")), wantErr: "member bin/ctr is there twice"},
		{name: "wrong sha256", archive: testTar(t, reg("bin/containerd"), reg("bin/ctr")), sha: sha("another"), wantErr: "sha256 mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, tt.archive) }))
			defer srv.Close()
			n := testNode(t, nil)
			want := tt.sha
			if want == "" {
				want = sha(tt.archive)
			}
			a := &Archive{Name: "containerd", URL: srv.URL + "/c.tar.gz", SHA256: want, Members: members}
			if err := a.Validate(); err != nil {
				t.Fatal(err)
			}
			err := a.Render(context.Background(), n, nil, a, a)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Render error = %v, want one containing %q", err, tt.wantErr)
			}
			if engine.ClassOf(err) != engine.ClassTerminal {
				t.Errorf("error class = %v, want terminal", engine.ClassOf(err))
			}
			for _, d := range []string{"usr/local/bin", "var/lib/kubeup/assets"} {
				entries, _ := os.ReadDir(filepath.Join(n.Root, d))
				if len(entries) != 0 {
					t.Errorf("left behind in /%s: %v", d, entries)
				}
			}
		})
	}
}

func TestArchiveValidate(t *testing.T) {
	good := sha("x")
	tests := []struct {
		name    string
		a       *Archive
		wantErr string
	}{
		{name: "member climbs", a: &Archive{Name: "c", URL: "https://h/c", SHA256: good, Members: map[string]string{"../x": "/usr/local/bin/x"}}, wantErr: "not a clean relative member name"},
		{name: "path relative", a: &Archive{Name: "c", URL: "https://h/c", SHA256: good, Members: map[string]string{"x": "usr/x"}}, wantErr: "Members[x]"},
		{name: "one path twice", a: &Archive{Name: "c", URL: "https://h/c", SHA256: good, Members: map[string]string{"x": "/a/x", "y": "/a/x"}}, wantErr: "both installed at /a/x"},
		{name: "no members", a: &Archive{Name: "c", URL: "https://h/c", SHA256: good}, wantErr: "field Members is required"},
		{name: "no sha256", a: &Archive{Name: "c", URL: "https://h/c", Members: map[string]string{"x": "/a/x"}}, wantErr: "field SHA256 is required"},
		{name: "name", a: &Archive{Name: "../c", URL: "https://h/c", SHA256: good, Members: map[string]string{"x": "/a/x"}}, wantErr: "field Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.a.Validate(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestArchiveDeps(t *testing.T) {
	enginetest.CheckDeps(t, &Archive{Name: "c", After: []engine.Task{&File{Path: "/y"}}})
}
