package nodetasks

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
)

const secret = "TOP SECRET host content\n"

// secretOutside writes a file with secret content next to the node root, outside it, and returns its host path.
func secretOutside(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// climbTo returns a relative symlink target that climbs from the node path link, in n, to the host path target.
func climbTo(t *testing.T, n *Node, link, target string) string {
	t.Helper()
	rel, err := filepath.Rel(filepath.Dir(filepath.Join(n.Root, link)), target)
	if err != nil || !strings.HasPrefix(rel, "..") {
		t.Fatalf("no climbing path from %s to %s: %q, %v", link, target, rel, err)
	}
	return rel
}

func symlink(t *testing.T, n *Node, link, target string) {
	t.Helper()
	host := filepath.Join(n.Root, link)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, host); err != nil {
		t.Fatal(err)
	}
}

// A read never follows a link out of the root: a manifest, a unit file or /etc/passwd that is a symbolic link
// climbing out of the root is an error that names the link and its target, and the dry run's plan never shows
// what is outside.
func TestReadsStayInsideRoot(t *testing.T) {
	ctx := context.Background()
	const manifest = "/etc/kubernetes/manifests/etcd.manifest"
	const unit = "/etc/systemd/system/kubelet.service"
	one := func(add func(g *engine.Graph[*Node])) func() *engine.Graph[*Node] {
		return func() *engine.Graph[*Node] {
			g := engine.NewGraph[*Node]()
			add(g)
			return g
		}
	}
	tests := []struct {
		name  string
		link  string
		graph func() *engine.Graph[*Node]
	}{
		{name: "manifest", link: manifest, graph: one(func(g *engine.Graph[*Node]) {
			engine.Add(g, &ManifestFile{Path: manifest, Pod: etcdPod()})
		})},
		{name: "unit", link: unit, graph: one(func(g *engine.Graph[*Node]) {
			engine.Add(g, &SystemdService{Name: "kubelet.service", Definition: ptr(kubeletUnit), Enabled: ptr(true)})
		})},
		{name: "unit of a package", link: unit, graph: one(func(g *engine.Graph[*Node]) {
			engine.Add(g, &SystemdService{Name: "kubelet.service", Enabled: ptr(true)})
		})},
		{name: "drop-in", link: unit + ".d/10-kubeup.conf", graph: one(func(g *engine.Graph[*Node]) {
			engine.Add(g, &SystemdService{Name: "kubelet.service", DropIns: map[string]string{"10-kubeup.conf": "[Service]\n"}})
		})},
		{name: "passwd", link: "/etc/passwd", graph: one(func(g *engine.Graph[*Node]) {
			engine.Add(g, &File{Path: "/etc/kubernetes/x.conf", Contents: ptr("x"), Owner: ptr("me")})
		})},
		{name: "file a service depends on", link: "/var/lib/kubelet/config.yaml", graph: one(func(g *engine.Graph[*Node]) {
			conf := engine.Add(g, &File{Path: "/var/lib/kubelet/config.yaml"})
			engine.Add(g, &SystemdService{Name: "kubelet.service", Running: ptr(true), DependsOn: []engine.Task{conf}})
		})},
	}
	for _, tt := range tests {
		for _, kind := range []string{"the file", "its directory"} {
			t.Run(tt.name+", "+kind+" a link out", func(t *testing.T) {
				n := testNode(t, map[string]string{"/etc/kubernetes/x.conf": "x"})
				out := secretOutside(t)
				link := tt.link
				switch kind {
				case "the file":
					os.Remove(filepath.Join(n.Root, link))
					symlink(t, n, link, climbTo(t, n, link, out))
				case "its directory": // a directory on the way is a link to a directory outside that has the file
					link = filepath.Dir(tt.link)
					if err := os.RemoveAll(filepath.Join(n.Root, link)); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(out, filepath.Join(filepath.Dir(out), filepath.Base(tt.link))); err != nil {
						t.Fatal(err)
					}
					out = filepath.Join(filepath.Dir(out), filepath.Base(tt.link))
					symlink(t, n, link, climbTo(t, n, link, filepath.Dir(out)))
				}
				g := tt.graph()
				res, err := engine.Run(ctx, g, n, engine.Options{Target: engine.DryRun})
				if err == nil || !strings.Contains(err.Error(), "the symbolic link "+link+" -> ") ||
					!strings.Contains(err.Error(), "escapes the node root") {
					t.Errorf("dry run error = %v, want one naming the link %s and its target", err, link)
				}
				if res != nil && res.Plan != nil {
					var report bytes.Buffer
					res.Plan.WriteText(&report)
					if strings.Contains(report.String(), "SECRET") {
						t.Errorf("the plan shows what is outside the root:\n%s", report.String())
					}
				}
				if _, err := engine.Run(ctx, tt.graph(), n, engine.Options{Target: engine.Apply}); err == nil {
					t.Errorf("apply: want an error")
				}
				if b, _ := os.ReadFile(out); string(b) != secret {
					t.Errorf("the file outside the root changed: %q", b)
				}
			})
		}
	}
}

// An absolute link target is a path on the node: read from the root, never from the host; the apply replaces the
// link with the file it writes, and leaves the host's file alone.
func TestAbsoluteLinkIsReadFromTheRoot(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, nil)
	out := secretOutside(t)
	const manifest = "/etc/kubernetes/manifests/etcd.manifest"
	symlink(t, n, manifest, out) // absolute: out, inside the root, does not exist
	g := func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &ManifestFile{Path: manifest, Pod: etcdPod()})
		return g
	}
	res, err := engine.Run(ctx, g(), n, engine.Options{Target: engine.DryRun})
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	res.Plan.WriteText(&report)
	if strings.Contains(report.String(), "SECRET") || len(res.Plan.Changes) != 1 || res.Plan.Changes[0].Action != engine.Create {
		t.Errorf("want a create that shows nothing of the host's file, got:\n%s", report.String())
	}
	if _, err := engine.Run(ctx, g(), n, engine.Options{Target: engine.Apply}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(filepath.Join(n.Root, manifest))
	if err != nil || !st.Mode().IsRegular() {
		t.Errorf("after the apply, %s: %v, %v; want a regular file in place of the link", manifest, st, err)
	}
	if b, _ := os.ReadFile(out); string(b) != secret {
		t.Errorf("the host's file changed: %q", b)
	}
}

// Links that stay inside the root are followed there, relative or absolute, at the end of a path too.
func TestReadNodeFileFollowsLinksInside(t *testing.T) {
	n := testNode(t, map[string]string{
		"/usr/lib/systemd/system/a.service": "[Service]\n",
		"/etc/systemd/system/b.service":     "->/usr/lib/systemd/system/a.service",
		"/etc/systemd/system/c.service":     "->../../../usr/lib/systemd/system/a.service",
		"/etc/systemd/system/d.service":     "->b.service",
		"/etc/systemd/system/gone.service":  "->/nowhere",
		"/var/run":                          "->/run",
		"/run/x":                            "x",
	})
	for _, p := range []string{"/etc/systemd/system/b.service", "/etc/systemd/system/c.service", "/etc/systemd/system/d.service"} {
		b, ok, err := n.readNodeFile(p)
		if err != nil || !ok || string(b) != "[Service]\n" {
			t.Errorf("readNodeFile(%s) = %q, %v, %v", p, b, ok, err)
		}
	}
	if b, ok, err := n.readNodeFile("/var/run/x"); err != nil || !ok || string(b) != "x" {
		t.Errorf("readNodeFile(/var/run/x) = %q, %v, %v", b, ok, err)
	}
	if _, ok, err := n.readNodeFile("/etc/systemd/system/gone.service"); err != nil || ok {
		t.Errorf("a dangling link: %v, %v; want absent", ok, err)
	}
	if _, _, err := n.readNodeFile("/usr/lib/systemd/system"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v; want an error", err)
	}
	if err := unix.Mkfifo(filepath.Join(n.Root, "run/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.readNodeFile("/run/fifo"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v; want an error, not a read that blocks", err)
	}
}

// openBeneath, the fallback where openat2 is missing, follows no symbolic link either.
func TestOpenBeneath(t *testing.T) {
	n := testNode(t, map[string]string{"/etc/a": "a", "/etc/l": "->a", "/d": "->/etc"})
	root, err := unix.Open(n.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	fd, err := openBeneath(root, "etc/a", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(os.NewFile(uintptr(fd), "a"))
	if string(b) != "a" {
		t.Errorf("read %q", b)
	}
	for _, rel := range []string{"etc/l", "d/a", "etc/../etc/a"} {
		if fd, err := openBeneath(root, rel, unix.O_RDONLY, 0); err == nil {
			unix.Close(fd)
			t.Errorf("openBeneath(%s): want an error", rel)
		}
	}
}

// A mode change in place never follows a symbolic link: chmod(2) would, out of the root too.
func TestChmodNodeFollowsNoLink(t *testing.T) {
	n := testNode(t, map[string]string{"/etc/a": "a"})
	out := secretOutside(t)
	symlink(t, n, "/etc/out", out)
	symlink(t, n, "/etc/rel", climbTo(t, n, "/etc/rel", out))
	for _, p := range []string{"/etc/out", "/etc/rel"} {
		if err := n.chmodNode(p, 0o666); err == nil {
			t.Errorf("chmodNode(%s): want an error", p)
		}
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the file outside the root: %v, %v; want mode 0644 still", st.Mode(), err)
	}
	if err := n.chmodNode("/etc/a", 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(n.Root, "etc/a")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("/etc/a: %v, %v; want mode 0600", st.Mode(), err)
	}
}
