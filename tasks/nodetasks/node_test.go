package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
)

// meUID and meGID are the ids of the user and group "me" of testNode: the test's own, or when the test runs as
// root (which may chown to anyone), ids other than root's.
var meUID, meGID = func() (int, int) {
	if os.Getuid() == 0 {
		return 4242, 4242
	}
	return os.Getuid(), os.Getgid()
}()

// testNode returns a Node without systemd in a temporary directory that holds files (by node path; a value
// "->TARGET" is a symlink) and an /etc/passwd and /etc/group naming the user and group "me" (meUID, meGID).
func testNode(t *testing.T, files map[string]string) *Node {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{
		"/etc/passwd": fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nme:x:%d:%d::/:/bin/sh\n", meUID, meGID),
		"/etc/group":  fmt.Sprintf("root:x:0:\nme:x:%d:\n", meGID),
	}
	for p, data := range files {
		all[p] = data
	}
	for p, data := range all {
		host := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(data, "->"); ok {
			err = os.Symlink(target, host)
		} else {
			err = os.WriteFile(host, []byte(data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := NewNode(context.Background(), root, NodeOptions{Systemd: SystemdNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestHostPath(t *testing.T) {
	n := testNode(t, map[string]string{
		"/etc/kubernetes/x":    "",
		"/var/run":             "->/run",            // absolute: starts again at the root
		"/run/k":               "",                  //
		"/opt/rel":             "->../etc",          // relative, inside
		"/opt/out":             "->../../../../tmp", // relative, climbs out
		"/opt/abs-out":         "->/../../tmp",      // absolute, climbs out
		"/opt/loop":            "->loop",
		"/etc/kubernetes/file": "x",
	})
	tests := []struct {
		path    string
		want    string // under the root; "" when an error is wanted
		wantErr string
	}{
		{path: "/etc/kubernetes/kubelet.conf", want: "/etc/kubernetes/kubelet.conf"},
		{path: "/", want: ""},
		{path: "/var/run/kubeup.pid", want: "/run/kubeup.pid"},
		{path: "/opt/rel/kubernetes/x", want: "/etc/kubernetes/x"},
		{path: "/opt/rel", want: "/opt/rel"}, // the last component is not followed
		{path: "/missing/dir/f", want: "/missing/dir/f"},
		{path: "relative/f", wantErr: "is not absolute"},
		{path: "/etc/../tmp/f", wantErr: `escapes the node root: it contains ".."`},
		{path: "/opt/out/f", wantErr: "the symbolic link /opt/out -> ../../../../tmp escapes the node root"},
		{path: "/opt/abs-out/f", wantErr: "the symbolic link /opt/abs-out -> /../../tmp escapes the node root"},
		{path: "/opt/loop/f", wantErr: "too many levels of symbolic links"},
		{path: "/etc/kubernetes/file/f", wantErr: "/etc/kubernetes/file is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := n.hostPath(tt.path, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("hostPath(%q) = %q, %v; want an error containing %q", tt.path, got, err, tt.wantErr)
				}
				// Only a person can fix such a path: nodeup does not retry it (TestPersonOnlyFailuresStopRetries).
				if !markedTerminal(err) {
					t.Errorf("hostPath(%q): %v is not marked engine.Terminal", tt.path, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("hostPath(%q): %v", tt.path, err)
			}
			if want := filepath.Join(n.Root, tt.want); got != want {
				t.Errorf("hostPath(%q) = %q, want %q", tt.path, got, want)
			}
		})
	}
}

func TestHostPathMkdirs(t *testing.T) {
	n := testNode(t, map[string]string{"/var/run": "->/run"})
	got, err := n.hostPath("/var/run/a/b/c", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(n.Root, "run/a/b/c"); got != want {
		t.Errorf("hostPath = %q, want %q", got, want)
	}
	if st, err := os.Stat(filepath.Join(n.Root, "run/a/b")); err != nil || !st.IsDir() {
		t.Errorf("parent directory not created: %v", err)
	}
}

func TestNewNodeWithoutSystemd(t *testing.T) {
	n, err := NewNode(context.Background(), t.TempDir(), NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Systemd != nil {
		t.Error("a directory without a systemd socket: Systemd should be nil")
	}
	if _, err := NewNode(context.Background(), t.TempDir(), NodeOptions{Systemd: SystemdRequired}); err == nil {
		t.Error("SystemdRequired without a socket: want an error")
	}
	if _, err := NewNode(context.Background(), "relative", NodeOptions{}); err == nil {
		t.Error("a relative root: want an error")
	}
}

// markedTerminal says that err was marked engine.Terminal by the task (not merely unclassified).
func markedTerminal(err error) bool {
	var ce *engine.ClassError
	return errors.As(err, &ce) && ce.Class == engine.ClassTerminal
}
