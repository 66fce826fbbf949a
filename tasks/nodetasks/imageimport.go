package nodetasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	"kubeup.dev/kubeup/engine"
)

// ImageNamespace is the containerd namespace of kubelet's containers (CRI's): the images nodeup imports are
// there, where kubelet finds them.
const ImageNamespace = "k8s.io"

// PinnedLabel is containerd's label of an image kubelet's image garbage collection keeps (CRI reports the image
// pinned), with the value pinnedValue.
const (
	PinnedLabel = "io.cri-containerd.pinned"
	pinnedValue = "pinned"
)

// ImageImport is a container image present in containerd, imported from an OCI image archive on the node when it
// is not: the images a node preloads (it may reach no registry). It runs the node's ctr against containerd's
// socket, both resolved inside the node root, so that the node's own binaries talk to the node's own containerd
// whatever the root is (/, a tree, /proc/PID/root); ctr reads the archive from its standard input, opened inside
// the root too. An image containerd has is left alone: the archive is not compared with it.
//
// The image is pinned (PinnedLabel): kubelet's image garbage collection, which removes the images no container
// uses once the disk fills past its threshold, keeps it. A node that reaches no registry could not pull it back.
type ImageImport struct {
	// Name is the image's reference as containerd lists it and the manifests name it
	// (registry.k8s.io/pause:3.10.2), and the task's name.
	Name string
	// Archive is the node path of the OCI image archive that holds Name.
	Archive string
	// Address is the node path of containerd's socket (/run/containerd/containerd.sock).
	Address string
	// Ctr is the node path of containerd's ctr (/usr/local/bin/ctr).
	Ctr string
	// Pinned asks for containerd's image to carry PinnedLabel: the model asks it of every preloaded image. An
	// image not asked to be pinned is left as it is (containerd pins its sandbox image itself).
	Pinned bool
	// After are the tasks done before: the archive's and containerd's service.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*ImageImport, *Node] = (*ImageImport)(nil)
	_ engine.Renderer[*ImageImport, *Node] = (*ImageImport)(nil)
)

func (i *ImageImport) Key() engine.Key     { return engine.Key{Type: "ImageImport", Name: i.Name} }
func (i *ImageImport) Deps() []engine.Task { return i.After }

// Find asks containerd whether it has the image: nil when it does not, or when containerd or ctr is not there
// yet (a fresh node, a dry run before the runtime is installed): the dry run then lists the import. Where no
// systemd runs in the root and containerd does not run either (a tree nodeup prepares for an image), containerd
// cannot be asked, and nothing starts it: the image is taken as present, as SystemdService takes a service's
// running state there, and the log says so.
func (i *ImageImport) Find(ctx context.Context, n *Node) (*ImageImport, error) {
	ls, err := i.ctr(ctx, n, nil, "images", "ls", "--quiet")
	switch {
	case errors.Is(err, errNoRuntime) && n.Systemd == nil:
		engine.Logger(ctx).Info("containerd does not run in the node root and no systemd starts it: the image is not imported", "image", i.Name, "why", err)
		return i.found(), nil
	case errors.Is(err, errNoRuntime):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if !slices.Contains(strings.Fields(ls), i.Name) {
		return nil, nil
	}
	found := i.found()
	if i.Pinned { // else the label is not nodeup's concern: containerd pins its sandbox image itself
		if found.Pinned, err = i.pinned(ctx, n); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// found is the image as Find reports it when containerd has it: Pinned as asked, for a root where containerd
// cannot be asked; Find then asks.
func (i *ImageImport) found() *ImageImport {
	return &ImageImport{Name: i.Name, Archive: i.Archive, Address: i.Address, Ctr: i.Ctr, Pinned: i.Pinned, After: i.After}
}

// pinned asks containerd whether its image Name carries PinnedLabel.
func (i *ImageImport) pinned(ctx context.Context, n *Node) (bool, error) {
	ls, err := i.ctr(ctx, n, nil, "images", "ls", "--quiet", fmt.Sprintf("labels.%q==%s", PinnedLabel, pinnedValue))
	if err != nil {
		return false, err
	}
	return slices.Contains(strings.Fields(ls), i.Name), nil
}

// Validate checks the reference and the paths.
func (i *ImageImport) Validate() error {
	if i.Name == "" || strings.ContainsAny(i.Name, " \t\r\n\x00") || strings.HasPrefix(i.Name, "-") {
		return fmt.Errorf("field Name: %q is not an image reference such as registry.k8s.io/pause:3.10.2", i.Name)
	}
	for _, f := range []struct{ field, p string }{{"Archive", i.Archive}, {"Address", i.Address}, {"Ctr", i.Ctr}} {
		if err := checkNodePath(f.field, f.p); err != nil {
			return err
		}
	}
	return nil
}

func (i *ImageImport) CheckChanges(actual, expected, changes *ImageImport) error {
	return expected.Validate()
}

// Render imports the archive when containerd has no image Name (the node's platform only: what its containers
// run), then checks that containerd has the image under Name: an archive that holds no image of that name is a
// terminal error that lists what containerd has. Then it pins the image when Pinned asks.
func (i *ImageImport) Render(ctx context.Context, n *Node, actual, expected, changes *ImageImport) error {
	if actual == nil {
		if err := expected.importArchive(ctx, n); err != nil {
			return err
		}
	}
	if !expected.Pinned || (actual != nil && actual.Pinned) {
		return nil
	}
	label := PinnedLabel + "=" + pinnedValue
	if _, err := expected.ctr(ctx, n, nil, "images", "label", expected.Name, label); err != nil {
		return fmt.Errorf("labelling image %s %s: %w", expected.Name, label, err)
	}
	return nil
}

// importArchive imports the archive and checks that containerd then has the image Name.
func (i *ImageImport) importArchive(ctx context.Context, n *Node) error {
	expected := i
	archive, err := n.openNodeFile(expected.Archive, true)
	if errors.Is(err, fs.ErrNotExist) {
		return engine.Terminal(fmt.Errorf("importing %s: its archive %s is not on the node", expected.Name, expected.Archive))
	}
	if err != nil {
		return fmt.Errorf("importing %s: %w", expected.Name, err)
	}
	defer archive.Close()
	// ctr reads a regular file; the descriptor openNodeFile gives is non-blocking, which a read of a file ignores.
	if _, err := expected.ctr(ctx, n, archive, "images", "import", "-"); err != nil {
		return fmt.Errorf("importing %s from %s: %w", expected.Name, expected.Archive, err)
	}
	ls, err := expected.ctr(ctx, n, nil, "images", "ls", "--quiet")
	if err != nil {
		return fmt.Errorf("importing %s: listing containerd's images: %w", expected.Name, err)
	}
	if !slices.Contains(strings.Fields(ls), expected.Name) {
		return engine.Terminal(fmt.Errorf("importing %s from %s: containerd has no image of that name afterwards (it has: %s): "+
			"the archive must name the image as the manifests do", expected.Name, expected.Archive, strings.Join(strings.Fields(ls), ", ")))
	}
	engine.Logger(ctx).Info("imported image", "image", expected.Name, "archive", expected.Archive)
	return nil
}

// errNoRuntime is the error of ctr or containerd's socket not being on the node.
var errNoRuntime = errors.New("the container runtime is not there")

// ctr runs the node's ctr with args against the node's containerd, in ImageNamespace, stdin its standard input
// (nil: none), and returns its standard output. The binary and the socket are resolved inside the root and
// handed to ctr as descriptors (the binary run as /proc/self/fd/3, the socket reached as /proc/self/fd/4), so
// that a symbolic link cannot lead either out of the root and a long root does not overflow a socket address.
// An error that wraps errNoRuntime says either is missing.
func (i *ImageImport) ctr(ctx context.Context, n *Node, stdin *os.File, args ...string) (string, error) {
	bin, err := n.openNodeFile(i.Ctr, true)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: no %s", errNoRuntime, i.Ctr)
	}
	if err != nil {
		return "", err
	}
	defer bin.Close()
	sock, err := n.openSocket(i.Address)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: no socket %s (containerd is not running)", errNoRuntime, i.Address)
	}
	if err != nil {
		return "", err
	}
	defer sock.Close()
	argv := append([]string{"--address", "/proc/self/fd/4", "--namespace", ImageNamespace}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "/proc/self/fd/3", argv...)
	cmd.Args[0] = filepath.Base(i.Ctr)
	cmd.ExtraFiles = []*os.File{bin, sock}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", i.Ctr, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// openSocket opens the unix socket at node path p (O_PATH), resolved inside the root; a path that is not a
// socket is an error.
func (n *Node) openSocket(p string) (*os.File, error) {
	rel, err := n.resolve(p, true, false)
	if err != nil {
		return nil, err
	}
	fd, err := n.openResolvedFD(rel, unix.O_PATH, 0)
	if err != nil {
		return nil, engine.FileError(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, engine.FileError(&fs.PathError{Op: "stat", Path: filepath.Join(n.Root, p), Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return nil, engine.Terminal(fmt.Errorf("%s is a %s, not a socket", p, statOfSys(&st).typ))
	}
	return os.NewFile(uintptr(fd), filepath.Join(n.Root, p)), nil
}
