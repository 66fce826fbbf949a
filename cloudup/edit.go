package cloudup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

const editHeader = `# Edit the spec of cluster %s, then save and quit. Lines starting with '#' are ignored.
# An invalid spec is refused with every problem listed at the top, and this file opened again; save it unchanged
# to give up (the file is then kept).
# metadata.resourceVersion is the version of the Cluster you are editing: if someone changes it before you
# save, your edit is refused (and kept), not written over their change.
`

// Edit writes a cluster's Cluster to a temporary file, has edit (the user's editor) change it, and replaces the
// stored one with the result once it validates, as Replace does: refused (a *ConflictError) when someone else
// changed the Cluster since it was read, unless the store holds it as edited already, at the version the file
// shows (its metadata.resourceVersion; what the user makes of that line does not matter). A change of the
// cluster's instance groups meanwhile does not concern it. An unchanged file, or one that holds what is stored
// already (a comment added, someone else made the same change), changes nothing (changed is false). When the edit is refused (invalid, or the cluster changed
// meanwhile), the edited file is kept and its path returned with the error, so the user's work is not lost.
func (cs *Clusters) Edit(ctx context.Context, name string, edit func(path string) error) (changed bool, kept string, err error) {
	s, err := cs.Get(ctx, name)
	if err != nil {
		return false, "", err
	}
	shown := *s.Cluster
	shown.Metadata.ResourceVersion = s.ClusterVersion()
	var same bool // the saved file differs from the one shown, but holds what is stored: nothing is written
	changed, kept, err = editObject(fmt.Sprintf(editHeader, name), &shown, edit, func(path string, objs *model.Objects) error {
		if objs.Cluster == nil || len(objs.InstanceGroups) > 0 {
			return fmt.Errorf("%s: want exactly one Cluster (edit an instance group with `kubeup edit instancegroup NAME --name %s`)", path, name)
		}
		if n := objs.Cluster.Metadata.Name; n != name {
			return fmt.Errorf("%s: metadata.name %q is not the cluster being edited, %q: set it back", path, n, name)
		}
		objs.Cluster.Metadata.ResourceVersion = shown.Metadata.ResourceVersion
		r, err := cs.Replace(ctx, path, objs, ReplaceOptions{Cluster: name})
		same = err == nil && r.Unchanged
		return err
	})
	return changed && !same, kept, err
}

const editGroupHeader = `# Edit instance group %s of cluster %s, then save and quit. Lines starting with '#' are ignored.
# An invalid group is refused with every problem listed at the top, and this file opened again; save it unchanged
# to give up (the file is then kept).
# metadata.resourceVersion is the version of the group you are editing: if someone changes the group before you
# save, your edit is refused (and kept), not written over their change.
`

// EditInstanceGroup is Edit for the instance group named group of the cluster named cluster: the file shows the
// group alone (with the model.LabelCluster that names its cluster), and the result replaces the group in the
// cluster's spec, validated whole, as Edit replaces the Cluster (a change of the Cluster or of another group
// meanwhile does not concern it). Renaming the group, or naming another cluster,
// is refused; so is a change of the cluster's etcd membership once it was applied (see CreateInstanceGroups).
func (cs *Clusters) EditInstanceGroup(ctx context.Context, cluster, group string, edit func(path string) error) (changed bool, kept string, err error) {
	s, err := cs.Get(ctx, cluster)
	if err != nil {
		return false, "", err
	}
	ig := findGroup(s.InstanceGroups, group)
	if ig == nil {
		return false, "", fmt.Errorf("cluster %s has no instance group %q: it has %s (create one with `kubeup create instancegroup %s --name %s`)",
			cluster, group, strings.Join(groupNames(s.InstanceGroups), ", "), group, cluster)
	}
	shown := *ig
	shown.Metadata.ResourceVersion = s.GroupVersion(group)
	shown.Metadata.Labels = WithClusterLabel(ig.Metadata.Labels, cluster)
	var same bool // as in Edit
	changed, kept, err = editObject(fmt.Sprintf(editGroupHeader, group, cluster), &shown, edit, func(path string, objs *model.Objects) error {
		if objs.Cluster != nil || len(objs.InstanceGroups) != 1 {
			return fmt.Errorf("%s: want exactly one InstanceGroup, %s (edit the cluster with `kubeup edit cluster %s`)", path, group, cluster)
		}
		edited := objs.InstanceGroups[0]
		if n := edited.Metadata.Name; n != group {
			return fmt.Errorf("%s: metadata.name: %q: an instance group cannot be renamed (its machines and node configuration are named after it): "+
				"set it back to %q, or create a group of the new name (`kubeup create instancegroup`) and delete this one", path, n, group)
		}
		if n := objs.ClusterName(); n != "" && n != cluster {
			return fmt.Errorf("%s: metadata.labels[%s]: %q: the group is in cluster %q and cannot move to another: set it back to %q",
				path, model.LabelCluster, n, cluster, cluster)
		}
		edited.Metadata.ResourceVersion = shown.Metadata.ResourceVersion
		r, err := cs.Replace(ctx, path, objs, ReplaceOptions{Cluster: cluster})
		same = err == nil && r.Unchanged
		return err
	})
	return changed && !same, kept, err
}

// WithClusterLabel returns a copy of labels with model.LabelCluster set to cluster: the labels an instance group
// is shown with, so that a file of groups names their cluster.
func WithClusterLabel(labels map[string]string, cluster string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[model.LabelCluster] = cluster
	return out
}

// ErrNoReopen is what an edit function returns when it is called again after a refused save and cannot show the
// error to a person (no terminal: a scripted KUBE_EDITOR would make the same change again, for ever): the edit
// then ends with that refusal, its file kept.
var ErrNoReopen = errors.New("the editor is not reopened: no terminal")

// editObject writes header and shown (with its metadata.resourceVersion) to a temporary file, has edit (the
// user's editor) change it, decodes the result strictly and hands it to apply, which validates and writes it.
// An unchanged file changes nothing (changed is false). When the edit is refused for what the file holds (it
// does not decode, apply refused it), the editor is opened again on the user's text with the error in a comment
// block at its top, as kubectl edit does; saving it unchanged then gives up. The temporary file is removed,
// except when the edit fails for good (the editor failed, someone changed the cluster meanwhile, or the user
// gave up after an error): then it is kept and its path returned with the error, so the user's work is not lost.
func editObject(header string, shown any, edit func(path string) error, apply func(path string, objs *model.Objects) error) (changed bool, kept string, err error) {
	spec, err := model.Encode(shown)
	if err != nil {
		return false, "", err
	}
	original := append([]byte(header), spec...)
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

	var lastEdited []byte // the text of the last save refused, without the error block
	var lastErr error     // why
	for {
		if err := edit(path); err != nil {
			keep = true
			if lastErr != nil && errors.Is(err, ErrNoReopen) { // no one to fix it: the refusal stands
				return false, path, lastErr
			}
			return false, path, fmt.Errorf("the editor failed: %w", err)
		}
		edited, err := readFile(path)
		if err != nil {
			keep = true
			return false, path, err
		}
		switch {
		case bytes.Equal(edited, original):
			return false, "", nil
		case len(bytes.TrimSpace(stripComments(edited))) == 0: // as kubectl edit: an emptied file cancels the edit
			return false, "", nil
		case lastErr != nil && bytes.Equal(withoutErrorBlock(edited), lastEdited): // the same text again: the user gives up, as in kubectl
			keep = true
			return false, path, fmt.Errorf("%w\nthe edit was saved unchanged after this error: no valid change was made", lastErr)
		}
		err = applyEdit(path, original, edited, apply)
		if err == nil {
			return true, "", nil
		}
		if errors.Is(err, statestore.ErrConflict) { // no edit of the file fixes it
			keep = true
			return false, path, err
		}
		// Open the editor again on the user's text, the error on top.
		lastErr, lastEdited = err, withoutErrorBlock(edited)
		if err := os.WriteFile(path, append(errorBlock(err), lastEdited...), 0o600); err != nil {
			keep = true
			return false, path, fmt.Errorf("%w (and writing it back for another edit: %v)", lastErr, err)
		}
	}
}

// applyEdit decodes the edited text of an object that original showed and hands it to apply.
func applyEdit(path string, original, edited []byte, apply func(path string, objs *model.Objects) error) error {
	if was, now := topKinds(original), topKinds(edited); len(now) > 0 && !slices.Equal(was, now) {
		return fmt.Errorf("%s: kind: %s: an edit changes the object it shows, a %s, and cannot make it another kind: set kind back to %s",
			path, strings.Join(now, ", "), strings.Join(was, ", "), strings.Join(was, ", "))
	}
	objs, err := model.Decode(path, edited)
	if err != nil {
		return err
	}
	return apply(path, objs)
}

// errorMark starts the comment block that tells, at the top of a reopened edit, why the last save was refused.
const errorMark = "# kubeup: your last save was refused; fix what follows and save again, or save unchanged to give up:\n"

// errorBlock is the comment block that shows err at the top of a reopened edit.
func errorBlock(err error) []byte {
	b := []byte(errorMark)
	for line := range strings.Lines(err.Error()) {
		b = append(b, "#   "+strings.TrimRight(strings.Map(func(r rune) rune {
			if r < ' ' && r != '\t' || r == 0x7f {
				return -1 // no control character reaches the editor
			}
			return r
		}, line), "\n")+"\n"...)
	}
	return append(b, "#\n"...)
}

// withoutErrorBlock drops the block errorBlock put at the top of b, if it is still there as it was written.
func withoutErrorBlock(b []byte) []byte {
	rest, ok := bytes.CutPrefix(b, []byte(errorMark))
	if !ok {
		return b
	}
	for len(rest) > 0 {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		rest = after
		switch {
		case string(line) == "#":
			return rest
		case !bytes.HasPrefix(line, []byte("#")):
			return b // the block was changed: keep all of it
		}
	}
	return rest
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

// stripComments drops the lines of b that are YAML comments (the edit header).
func stripComments(b []byte) []byte {
	var out []byte
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// topKinds lists the top-level kind: of each document of b, in order.
func topKinds(b []byte) []string {
	var kinds []string
	for _, m := range topKind.FindAllSubmatch(b, -1) {
		kinds = append(kinds, strings.Trim(string(m[1]), `"'`))
	}
	return kinds
}

var topKind = regexp.MustCompile(`(?m)^kind:[ \t]*(\S+)[ \t]*$`)
