package nodeup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Executable is a program on the node copied from a file of this machine: nodeup installing itself. It is
// compared by sha256 (the dry run shows hashes, not a diff of binary contents). A nodetasks.File cannot carry it
// (its contents would print as text) nor a nodetasks.Asset (it downloads over HTTP only).
type Executable struct {
	// Path is the absolute path on the node, such as /usr/local/bin/nodeup, and the task's name.
	Path string
	// Source is the file to copy, on this machine (not under the node root).
	Source string `kubeup:"-"`
	// SHA256 is the hex sha256 of Source: required. The copy is checked against it before it replaces Path.
	SHA256 string
	// Mode is the permission bits (0755 when nil).
	Mode *os.FileMode
}

var (
	_ engine.Resource[*Executable, *nodetasks.Node] = (*Executable)(nil)
	_ engine.Renderer[*Executable, *nodetasks.Node] = (*Executable)(nil)
	_ engine.Validator                              = (*Executable)(nil)
)

func (e *Executable) Key() engine.Key     { return engine.Key{Type: "Executable", Name: e.Path} }
func (e *Executable) Deps() []engine.Task { return nil }

// Find hashes the file at Path under the node root; nil when there is none. Paths are resolved with os.Root:
// nothing outside the node root is read, even through a symbolic link.
func (e *Executable) Find(ctx context.Context, n *nodetasks.Node) (*Executable, error) {
	root, rel, err := openRoot(n, e.Path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	st, err := root.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, engine.Terminal(fmt.Errorf("%s: %w", e.Path, err))
	}
	if !st.Mode().IsRegular() {
		return nil, engine.Terminal(fmt.Errorf("%s is not a regular file (%s): remove it", e.Path, st.Mode().Type()))
	}
	actual := &Executable{Path: e.Path, Source: e.Source, Mode: ptr(st.Mode().Perm())}
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", e.Path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("hashing %s: %w", e.Path, err)
	}
	actual.SHA256 = hex.EncodeToString(h.Sum(nil))
	return actual, nil
}

// Validate checks the fields before the engine runs any task: a bad one stops the run before anything changed.
func (e *Executable) Validate() error {
	if !path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path || e.Path == "/" {
		return fmt.Errorf("field Path: %q is not a clean absolute path of a file", e.Path)
	}
	if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("field SHA256: %q is not a sha256 in hex", e.SHA256)
	}
	if e.Source == "" {
		return errors.New("field Source is required: the file to copy")
	}
	return nil
}

func (e *Executable) CheckChanges(actual, expected, changes *Executable) error {
	return expected.Validate()
}

// Render copies Source to Path as node tasks write files (nodetasks.Node.WriteAtomic: a temporary file beside it,
// its hash checked, synced and renamed over Path). A mode change alone is made in place.
func (e *Executable) Render(ctx context.Context, n *nodetasks.Node, actual, expected, changes *Executable) error {
	root, rel, err := openRoot(n, expected.Path)
	if err != nil {
		return err
	}
	defer root.Close()
	mode := os.FileMode(0o755)
	if expected.Mode != nil {
		mode = *expected.Mode
	}
	if actual != nil && changes.SHA256 == "" {
		if err := root.Chmod(rel, mode); err != nil {
			return fmt.Errorf("changing the mode of %s: %w", expected.Path, err)
		}
		return nil
	}
	// The copy is written as node tasks write files (nodetasks.Node.WriteAtomic): a nodeup killed during the copy
	// leaves a temporary file the next write in the directory removes, never one of its own naming for good.
	err = n.WriteAtomic(ctx, expected.Path, mode, func(w io.Writer) error {
		return copyChecked(w, expected.Source, expected.SHA256)
	})
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", expected.Source, expected.Path, err)
	}
	engine.Logger(ctx).Info("installed executable", "path", expected.Path, "source", expected.Source, "sha256", expected.SHA256)
	return nil
}

// copyChecked copies source to w, and fails unless its sha256 is want.
func copyChecked(w io.Writer, source, want string) error {
	in, err := os.Open(source)
	if err != nil {
		return err
	}
	defer in.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), in); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return engine.Terminal(fmt.Errorf("sha256 is %s, want %s: the file changed while nodeup ran", got, want))
	}
	return nil
}

// openRoot opens the node root and returns p relative to it.
func openRoot(n *nodetasks.Node, p string) (*os.Root, string, error) {
	rel := strings.TrimPrefix(path.Clean(p), "/")
	if !path.IsAbs(p) || rel == "" {
		return nil, "", engine.Terminal(fmt.Errorf("%q is not an absolute path of a file", p))
	}
	root, err := os.OpenRoot(n.Root)
	if err != nil {
		return nil, "", fmt.Errorf("opening the node root: %w", err)
	}
	return root, rel, nil
}

// fileSHA256 hashes a file of this machine.
func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func ptr[T any](v T) *T { return &v }
