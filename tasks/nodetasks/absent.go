package nodetasks

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"kubeup.dev/kubeup/engine"
)

// Absent is a file that must not exist on the node: protokube's etcd manifest while this node holds no volume of
// that etcd cluster. Find reports whether it exists; Render removes it (a symbolic link is removed, never
// followed). Its key is "Absent/<path>", so that a graph cannot ask for a file and its absence under one name
// unnoticed: put one or the other in a graph, never both.
type Absent struct {
	// Path is the absolute path on the node, and the task's name.
	Path string
	// Exists is what Find saw; the task wants it false.
	Exists bool
	// After orders the removal after other tasks.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*Absent, *Node] = (*Absent)(nil)
	_ engine.Renderer[*Absent, *Node] = (*Absent)(nil)
	_ engine.Validator                = (*Absent)(nil)
)

func (a *Absent) Key() engine.Key     { return engine.Key{Type: "Absent", Name: a.Path} }
func (a *Absent) Deps() []engine.Task { return a.After }

// Validate checks that Path is an absolute, clean path other than the root.
func (a *Absent) Validate() error {
	if err := checkNodePath("path", a.Path); err != nil {
		return err
	}
	if a.Path == "/" {
		return errors.New("path: the root cannot be absent")
	}
	if a.Exists {
		return errors.New("exists: an Absent task wants the file gone (leave Exists false)")
	}
	return nil
}

// Find reports whether the file exists. It never returns nil: an absent file is the task done, not a create.
func (a *Absent) Find(ctx context.Context, n *Node) (*Absent, error) {
	p, err := n.hostPath(a.Path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return &Absent{Path: a.Path, Exists: false}, nil
	}
	if err != nil {
		return nil, err
	}
	_, err = os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Absent{Path: a.Path, Exists: false}, nil
	case err != nil:
		return nil, engine.FileError(err)
	}
	return &Absent{Path: a.Path, Exists: true}, nil
}

func (a *Absent) CheckChanges(actual, expected, changes *Absent) error { return nil }

// Render removes the file, and syncs its directory so that the removal survives a crash.
func (a *Absent) Render(ctx context.Context, n *Node, actual, expected, changes *Absent) error {
	return n.removeNodeFile(a.Path)
}

// WrittenPaths returns the node paths a File, ManifestFile, Absent, Asset or Archive writes or removes; ok is false
// for any other task. What holds a graph to the node's owned directories (nodeup's and protokube's checkOwned)
// asks it.
func WrittenPaths(t engine.Task) (paths []string, ok bool) {
	if a, isArchive := t.(*Archive); isArchive {
		return a.Paths(), true
	}
	p, ok := writtenPath(t)
	if !ok {
		return nil, false
	}
	return []string{p}, true
}

func writtenPath(t engine.Task) (path string, ok bool) {
	switch t := t.(type) {
	case *File:
		return t.Path, true
	case *ManifestFile:
		return t.Path, true
	case *Absent:
		return t.Path, true
	case *Asset:
		return t.Path, true
	}
	return "", false
}
