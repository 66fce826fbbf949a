package nodetasks

import (
	"context"
	"errors"
	"os"

	"kubeup.dev/kubeup/engine"
)

// Asset is a file downloaded from a URL and verified against its sha256: a binary such as kubelet, or an image
// tarball. A file already at Path with the right hash is kept (it is the cache); it is hashed on every run.
type Asset struct {
	// Path is the absolute path on the node, and the task's name.
	Path string
	// URL is where the file is downloaded from (http or https).
	URL string
	// SHA256 is the hex sha256 of the file: required. A download that does not match is a terminal error and
	// leaves no file behind.
	SHA256 string
	// Mode is the permission bits (0644 when nil).
	Mode *os.FileMode
	// After orders this asset after other tasks.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*Asset, *Node] = (*Asset)(nil)
	_ engine.Renderer[*Asset, *Node] = (*Asset)(nil)
)

func (a *Asset) Key() engine.Key     { return engine.Key{Type: "Asset", Name: a.Path} }
func (a *Asset) Deps() []engine.Task { return a.After }

func (a *Asset) Find(ctx context.Context, n *Node) (*Asset, error) {
	return nil, errors.New("not implemented yet")
}

func (a *Asset) CheckChanges(actual, expected, changes *Asset) error {
	return nil
}

func (a *Asset) Render(ctx context.Context, n *Node, actual, expected, changes *Asset) error {
	return errors.New("not implemented yet")
}
