package nodetasks

import (
	"context"
	"errors"
	"os"

	"kubeup.dev/kubeup/engine"
)

// File types.
const (
	TypeFile      = "file"
	TypeDirectory = "directory"
	TypeSymlink   = "symlink"
)

// File is a regular file, a directory or a symbolic link on the node, with its contents, mode, owner and group.
type File struct {
	// Path is the absolute path on the node, such as "/etc/kubernetes/kubelet.conf", and the task's name.
	Path string
	// Type is "file" (when nil), "directory" or "symlink".
	Type *string
	// Contents is the whole content of a file; nil = don't care.
	Contents *string
	// Target is a symlink's target.
	Target *string
	// Mode is the permission bits (0644 for a new file and 0755 for a new directory when nil).
	Mode *os.FileMode
	// Owner is a user name (looked up in the node's /etc/passwd) or a numeric id.
	Owner *string
	// Group is a group name (looked up in the node's /etc/group) or a numeric id.
	Group *string
	// After orders this file after other tasks, such as the file that creates its user.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*File, *Node] = (*File)(nil)
	_ engine.Renderer[*File, *Node] = (*File)(nil)
)

func (f *File) Key() engine.Key     { return engine.Key{Type: "File", Name: f.Path} }
func (f *File) Deps() []engine.Task { return f.After }

func (f *File) Find(ctx context.Context, n *Node) (*File, error) {
	return nil, errors.New("not implemented yet")
}

func (f *File) CheckChanges(actual, expected, changes *File) error {
	return nil
}

func (f *File) Render(ctx context.Context, n *Node, actual, expected, changes *File) error {
	return errors.New("not implemented yet")
}
