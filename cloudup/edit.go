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
`

// Edit writes a cluster's spec to a temporary file, has edit (the user's editor) change it, and replaces the
// stored spec with the result once it validates. An unchanged file changes nothing (changed is false). When the
// edit is refused (invalid, or the cluster changed meanwhile), the edited file is kept and its path returned
// with the error, so the user's work is not lost.
func (cs *Clusters) Edit(ctx context.Context, name string, edit func(path string) error) (changed bool, kept string, err error) {
	s, err := cs.Get(ctx, name)
	if err != nil {
		return false, "", err
	}
	spec, err := model.Encode(s.Cluster)
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
	edited, err := os.ReadFile(path)
	if err != nil {
		return false, "", err
	}
	if bytes.Equal(edited, original) {
		return false, "", nil
	}
	objs, err := model.Decode(path, edited)
	if err == nil && (objs.Cluster == nil || len(objs.InstanceGroups) > 0) {
		err = fmt.Errorf("%s: want exactly one Cluster (edit instance groups with `kubeup replace -f`)", path)
	}
	if err == nil {
		err = cs.Replace(ctx, path, s, objs.Cluster, nil)
	}
	if err != nil {
		keep = true
		return false, path, err
	}
	return true, "", nil
}
