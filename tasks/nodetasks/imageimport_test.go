package nodetasks

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
)

// fakeCtr is a stand-in for ctr that keeps containerd's image list in $FAKE_CTR_IMAGES: `images ls --quiet`
// prints it, `images import -` adds the name its standard input holds; the pinned ones are in
// $FAKE_CTR_IMAGES.pinned, which `images label NAME io.cri-containerd.pinned=pinned` adds to and the filter of
// pinned images lists. It checks what the task hands it: the socket as
// descriptor 4, the namespace, and logs each call to $FAKE_CTR_LOG.
const fakeCtr = `#!/bin/sh
echo "$*" >>"$FAKE_CTR_LOG"
[ "$1" = --address ] && [ -S "$2" ] || { echo "address $2 is not a socket" >&2; exit 2; }
[ "$3" = --namespace ] && [ "$4" = k8s.io ] || { echo "namespace: $3 $4" >&2; exit 2; }
shift 4
case "$*" in
"images ls --quiet") cat "$FAKE_CTR_IMAGES" 2>/dev/null ;;
"images import -") cat >>"$FAKE_CTR_IMAGES"; echo >>"$FAKE_CTR_IMAGES" ;;
'images ls --quiet labels."io.cri-containerd.pinned"==pinned') cat "$FAKE_CTR_IMAGES.pinned" 2>/dev/null || true ;;
"images label "*" io.cri-containerd.pinned=pinned")
	grep -qxF "$3" "$FAKE_CTR_IMAGES" || { echo "image $3 not found" >&2; exit 1; }
	echo "$3" >>"$FAKE_CTR_IMAGES.pinned" ;;
*) echo "unknown command: $*" >&2; exit 2 ;;
esac
`

// runtimeNode is a test node with the fake ctr at /usr/local/bin/ctr, containerd's socket at
// /run/containerd/containerd.sock (with containerd false: none), and archives (node path -> the image name the
// fake reads from it).
func runtimeNode(t *testing.T, containerd bool, archives map[string]string) (n *Node, imagesFile, logFile string) {
	t.Helper()
	files := map[string]string{"/usr/local/bin/ctr": fakeCtr}
	for p, name := range archives {
		files[p] = name
	}
	n = testNode(t, files)
	if err := os.Chmod(filepath.Join(n.Root, "usr/local/bin/ctr"), 0o755); err != nil {
		t.Fatal(err)
	}
	if containerd {
		// A socket's address is short: it is bound in a directory of its own and moved into the root.
		dir, err := os.MkdirTemp("", "sock")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		l, err := net.Listen("unix", filepath.Join(dir, "s"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		sock := filepath.Join(n.Root, "run/containerd/containerd.sock")
		if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "s"), sock); err != nil {
			t.Fatal(err)
		}
	}
	imagesFile, logFile = filepath.Join(t.TempDir(), "images"), filepath.Join(t.TempDir(), "log")
	t.Setenv("FAKE_CTR_IMAGES", imagesFile)
	t.Setenv("FAKE_CTR_LOG", logFile)
	return n, imagesFile, logFile
}

func pauseImport() *ImageImport {
	return &ImageImport{Name: "registry.k8s.io/pause:3.10.2", Archive: "/var/lib/kubeup/images/pause.tar",
		Address: "/run/containerd/containerd.sock", Ctr: "/usr/local/bin/ctr", Pinned: true}
}

func TestImageImportApplyThenNoChanges(t *testing.T) {
	n, images, log := runtimeNode(t, true, map[string]string{"/var/lib/kubeup/images/pause.tar": "registry.k8s.io/pause:3.10.2"})
	if err := os.WriteFile(images, []byte("registry.k8s.io/etcd:3.5.21-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		engine.Add(g, pauseImport())
		return g
	}
	plan := enginetest.ApplyThenNoChanges(t, context.Background(), n, build)
	if len(plan.Changes) != 1 || plan.Changes[0].Key != pauseImport().Key() {
		t.Errorf("applied changes = %+v, want the import of the pause image only", plan.Changes)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "images import -"); got != 1 {
		t.Errorf("ctr imported %d times, want once; its calls:\n%s", got, b)
	}
	if got, _ := os.ReadFile(images); !strings.Contains(string(got), "registry.k8s.io/pause:3.10.2") {
		t.Errorf("containerd's images after the run: %q", got)
	}
	if got, _ := os.ReadFile(images + ".pinned"); string(got) != "registry.k8s.io/pause:3.10.2\n" {
		t.Errorf("pinned images after the run: %q, want the pause image only", got)
	}
}

// An image containerd already has (imported by an older nodeup, or pulled) is pinned, not imported again. An
// image not asked to be pinned keeps its label as it is: containerd pins its sandbox image itself.
func TestImageImportPins(t *testing.T) {
	n, images, log := runtimeNode(t, true, map[string]string{"/var/lib/kubeup/images/pause.tar": "registry.k8s.io/pause:3.10.2"})
	if err := os.WriteFile(images, []byte("registry.k8s.io/pause:3.10.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pinned := range []bool{true, false} {
		build := func() *engine.Graph[*Node] {
			g := engine.NewGraph[*Node]()
			i := pauseImport()
			i.Pinned = pinned
			engine.Add(g, i)
			return g
		}
		plan := enginetest.ApplyThenNoChanges(t, context.Background(), n, build)
		if pinned && (len(plan.Changes) != 1 || len(plan.Changes[0].Fields) != 1 || plan.Changes[0].Fields[0].Name != "Pinned") {
			t.Errorf("pinned: applied changes = %+v, want the Pinned field only", plan.Changes)
		}
		if !pinned && len(plan.Changes) != 0 {
			t.Errorf("not asked to be pinned: applied changes = %+v, want none", plan.Changes)
		}
		if got, _ := os.ReadFile(images + ".pinned"); string(got) != "registry.k8s.io/pause:3.10.2\n" {
			t.Errorf("pinned %v: pinned images %q, want the pause image", pinned, got)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "images import -") {
		t.Errorf("ctr imported an image containerd had; its calls:\n%s", b)
	}
}

// Before the runtime is there (a fresh node, the dry run of its first nodeup), the import is announced; where
// nothing can start containerd (no systemd in a tree), it cannot be asked and nothing is announced.
func TestImageImportFindWithoutRuntime(t *testing.T) {
	n, _, _ := runtimeNode(t, false, nil)
	got, err := pauseImport().Find(context.Background(), n)
	if err != nil || got == nil {
		t.Errorf("no systemd, no containerd: Find = %+v, %v; want the image taken as present", got, err)
	}
	// With a systemd (which starts containerd before the import), a missing socket is a missing image: Find
	// tells it from errNoRuntime.
	if _, err := pauseImport().ctr(context.Background(), n, nil, "images", "ls", "--quiet"); !errors.Is(err, errNoRuntime) {
		t.Errorf("ctr without a socket: %v, want errNoRuntime", err)
	}
}

func TestImageImportRenderErrors(t *testing.T) {
	tests := []struct {
		name     string
		archives map[string]string
		wantErr  string
	}{
		{name: "no archive", wantErr: "its archive /var/lib/kubeup/images/pause.tar is not on the node"},
		{name: "archive of another image", archives: map[string]string{"/var/lib/kubeup/images/pause.tar": "registry.k8s.io/pause:3.9"},
			wantErr: "containerd has no image of that name afterwards (it has: registry.k8s.io/pause:3.9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, _, _ := runtimeNode(t, true, tt.archives)
			i := pauseImport()
			err := i.Render(context.Background(), n, nil, i, i)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Render error = %v, want one containing %q", err, tt.wantErr)
			}
			if engine.ClassOf(err) != engine.ClassTerminal {
				t.Errorf("error class = %v, want terminal", engine.ClassOf(err))
			}
		})
	}
}

func TestImageImportValidate(t *testing.T) {
	for _, bad := range []func(*ImageImport){
		func(i *ImageImport) { i.Name = "" },
		func(i *ImageImport) { i.Name = "--all-platforms" },
		func(i *ImageImport) { i.Archive = "pause.tar" },
		func(i *ImageImport) { i.Address = "/run/../containerd.sock" },
		func(i *ImageImport) { i.Ctr = "" },
	} {
		i := pauseImport()
		bad(i)
		if err := i.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", i)
		}
	}
	if err := pauseImport().Validate(); err != nil {
		t.Errorf("Validate of a good task: %v", err)
	}
}

func TestImageImportDeps(t *testing.T) {
	enginetest.CheckDeps(t, &ImageImport{Name: "x", After: []engine.Task{&File{Path: "/x"}}})
}
