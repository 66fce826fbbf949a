package nodetasks

import (
	"context"
	"errors"

	"kubeup.dev/kubeup/engine"
)

// ManifestFile is a static-pod manifest: a Pod rendered as YAML, byte-stable from run to run, at Path (such as
// /etc/kubernetes/manifests/kube-apiserver.manifest), where the kubelet picks it up.
type ManifestFile struct {
	// Path is the absolute path on the node, and the task's name.
	Path string
	// Pod is the static pod. It is compared through Manifest, its YAML.
	Pod *Pod `kubeup:"-"`
	// Manifest is the YAML of Pod: derived, set by Find; leave it nil. It is what is compared and shown as a
	// line diff in the dry run.
	Manifest *string
	// After orders this manifest after other tasks, such as the mount of the data it serves.
	After []engine.Task `kubeup:"-"`
}

var (
	_ engine.Resource[*ManifestFile, *Node] = (*ManifestFile)(nil)
	_ engine.Renderer[*ManifestFile, *Node] = (*ManifestFile)(nil)
)

func (m *ManifestFile) Key() engine.Key     { return engine.Key{Type: "ManifestFile", Name: m.Path} }
func (m *ManifestFile) Deps() []engine.Task { return m.After }

func (m *ManifestFile) Find(ctx context.Context, n *Node) (*ManifestFile, error) {
	return nil, errors.New("not implemented yet")
}

func (m *ManifestFile) CheckChanges(actual, expected, changes *ManifestFile) error {
	return nil
}

func (m *ManifestFile) Render(ctx context.Context, n *Node, actual, expected, changes *ManifestFile) error {
	return errors.New("not implemented yet")
}
