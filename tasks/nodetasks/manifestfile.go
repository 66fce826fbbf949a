package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"os"

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

// manifestMode is the mode of a manifest: the kubelet reads it as root; it names files, it holds no secrets.
const manifestMode = os.FileMode(0o644)

// Find renders Pod into Manifest, then reads the file at Path; nil when there is none.
func (m *ManifestFile) Find(ctx context.Context, n *Node) (*ManifestFile, error) {
	want := ""
	if m.Pod != nil {
		y, err := m.Pod.YAML()
		if err != nil {
			return nil, err
		}
		m.Manifest, want = &y, y
	}
	got, same, ok, err := n.readNodeFileComparing(m.Path, want)
	if err != nil || !ok {
		return nil, err
	}
	if same && m.Manifest != nil {
		return &ManifestFile{Path: m.Path, Manifest: m.Manifest}, nil
	}
	return &ManifestFile{Path: m.Path, Manifest: &got}, nil
}

// Validate checks the path and the pod: a name, containers with a name and an image, host paths that are
// absolute and clean.
func (m *ManifestFile) Validate() error {
	if err := checkNodePath("Path", m.Path); err != nil {
		return err
	}
	if m.Pod == nil {
		return errors.New("field Pod is required: the static pod to write")
	}
	if len(m.Pod.Spec.Containers) == 0 || m.Pod.Metadata.Name == "" {
		return errors.New("field Pod: a static pod needs metadata.name and at least one container")
	}
	for i, c := range m.Pod.Spec.Containers {
		if c.Name == "" || c.Image == "" {
			return fmt.Errorf("field Pod: spec.containers[%d] needs a name and an image", i)
		}
	}
	for i, v := range m.Pod.Spec.Volumes {
		if v.HostPath != nil {
			if err := checkNodePath(fmt.Sprintf("Pod: spec.volumes[%d].hostPath.path", i), v.HostPath.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *ManifestFile) CheckChanges(actual, expected, changes *ManifestFile) error {
	return expected.Validate()
}

// Render writes the manifest atomically: the kubelet never reads half a pod.
func (m *ManifestFile) Render(ctx context.Context, n *Node, actual, expected, changes *ManifestFile) error {
	if err := n.writeFileAtomic(ctx, expected.Path, []byte(*expected.Manifest), manifestMode, -1, -1); err != nil {
		return err
	}
	engine.Logger(ctx).Info("wrote static pod manifest", "path", expected.Path, "pod", expected.Pod.String())
	return nil
}
