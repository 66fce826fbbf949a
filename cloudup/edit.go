package cloudup

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"kubeup.dev/kubeup/model"
)

const editHeader = `# Edit the spec of cluster %s, then save and quit. Lines starting with '#' are ignored.
# An invalid spec is refused with every problem listed; your text is then kept for you.
# metadata.resourceVersion is the version of the spec you are editing: if someone changes the cluster before
# you save, your edit is refused (and kept), not written over their change.
`

// Edit writes a cluster's spec to a temporary file, has edit (the user's editor) change it, and replaces the
// stored spec with the result once it validates, on the condition that the cluster is still at the generation
// it read (the metadata.resourceVersion the file shows; what the user makes of that line does not matter). An
// unchanged file changes nothing (changed is false). When the edit is refused (invalid, or the cluster changed
// meanwhile), the edited file is kept and its path returned with the error, so the user's work is not lost.
func (cs *Clusters) Edit(ctx context.Context, name string, edit func(path string) error) (changed bool, kept string, err error) {
	s, err := cs.Get(ctx, name)
	if err != nil {
		return false, "", err
	}
	shown := *s.Cluster
	shown.Metadata.ResourceVersion = string(s.Generation)
	spec, err := model.Encode(&shown)
	if err != nil {
		return false, "", err
	}
	original := append([]byte(fmt.Sprintf(editHeader, name)), spec...)
	f, err := os.CreateTemp("", "kubeup-edit-*.yaml")
	if err != nil {
		return false, "", err
	}
	path := f.Name()
	_, werr := f.Write(original)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return false, "", werr
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(path)
		}
	}()

	if err := edit(path); err != nil {
		keep = true
		return false, path, fmt.Errorf("the editor failed: %w", err)
	}
	edited, err := readFile(path)
	if err != nil {
		keep = true
		return false, path, err
	}
	if bytes.Equal(edited, original) {
		return false, "", nil
	}
	objs, err := model.Decode(path, edited)
	if err == nil && (objs.Cluster == nil || len(objs.InstanceGroups) > 0) {
		err = fmt.Errorf("%s: want exactly one Cluster (edit instance groups with `kubeup replace -f`)", path)
	}
	if err == nil {
		_, _, err = cs.replace(ctx, path, s, objs.Cluster, nil)
	}
	if err != nil {
		keep = true
		return false, path, err
	}
	return true, "", nil
}

// readFile reads at most model.MaxSpecBytes of the edited file.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return model.ReadSpec(path, f)
}
