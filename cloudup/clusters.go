package cloudup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// Clusters reads and writes the clusters of one state store:
//
//	<cluster>/config                  the cluster's spec as the user wrote it: the Cluster, then its
//	                                  InstanceGroups (YAML documents separated by "---")
//	<cluster>/lock                    who is running `update --yes` or `delete --yes` on it (see Lock)
//	<cluster>/cluster-completed.spec  the complete spec the last update applied
//	<cluster>/nodeup/<group>          each group's node configuration, which nodeup reads
//	<cluster>/nodeup/<Role>.role      what the groups of a role share (the spec, the keystore's files), once
//
// A cluster's spec is one object, so that every change of it is all or nothing: no object store offers
// transactions over several objects. It is written with one conditional write (statestore.Store.WriteIf): on
// create, on the condition that it does not exist; on a change, that it still has the generation that was read.
// Each object of the spec (the Cluster, each InstanceGroup) has a version of its own, which a change compares
// (see clusters_conflict.go): of two operators changing the same object from the same read, the second is
// refused and writes nothing; two changing different objects both succeed, the second change added to the first.
type Clusters struct {
	Store statestore.Store

	// lockPoll is how often a wait for a cluster's lock looks again (default 1s); lockMessageEvery how often
	// it says that it still waits (default 5s). Tests make them short.
	lockPoll, lockMessageEvery time.Duration
	// raceWait is the longest wait before a change is tried again after someone else wrote the spec between its
	// read and its write (default 500ms; see retryRaced). Tests make it short.
	raceWait time.Duration
}

// Stored is a cluster as read from the store.
type Stored struct {
	Cluster        *model.Cluster
	InstanceGroups []*model.InstanceGroup // sorted by name
	// Generation is the generation of the spec object that was read: what a write of this spec is conditional
	// on. What `kubeup get` prints as an object's metadata.resourceVersion is its own version (ClusterVersion,
	// GroupVersion). The objects above do not carry either.
	Generation statestore.Generation
	raw        []byte            // what was read
	encoded    map[string][]byte // each object's encoding, by objectKey: what its version is the hash of
	// legacy are the objects of an older kubeup's layout that the instance groups were read from, which the
	// next write of the spec makes obsolete.
	legacy []string
}

// specPath is the object that holds a cluster's spec.
func specPath(name string) string { return model.ConfigPath(name) }

// List returns the names of the clusters in the store, sorted, whether their specs can be read or not, and
// whether they have one or not: a directory named like a cluster that holds objects but no spec (keys an
// interrupted create or delete left) is listed too, and reading it is an *UnreadableError (ErrIncomplete).
func (cs *Clusters) List(ctx context.Context) ([]string, error) {
	paths, err := cs.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range paths {
		if dir, _, ok := strings.Cut(p, "/"); ok && model.ValidClusterName(dir) == nil && !slices.Contains(names, dir) {
			names = append(names, dir)
		}
	}
	// A store URL that names a cluster's own directory (its configBase, pasted) holds the cluster's objects at
	// its top: say so, rather than list no clusters.
	if slices.Contains(paths, "config") && !slices.ContainsFunc(names, func(n string) bool { return slices.Contains(paths, specPath(n)) }) {
		url := strings.TrimSuffix(cs.Store.URL(), "/")
		return nil, fmt.Errorf("state store %s holds a cluster's objects at its top: it is the directory of a cluster (its spec.configBase), not a state store; "+
			"use the directory above it: --state %s", url, url[:strings.LastIndex(url, "/")])
	}
	slices.Sort(names)
	return names, nil
}

// NotFoundError says a cluster is not in the store.
type NotFoundError struct {
	Name, Store string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("cluster %q not found in state store %s: list clusters with `kubeup get clusters`, or check --state / $%s",
		e.Name, e.Store, statestore.EnvStateStore)
}

// UnreadableError says a cluster's stored spec does not decode: the object is corrupt, or a newer kubeup wrote
// fields this one does not know. The cluster can still be listed, deleted (Delete) and replaced whole (Replace).
type UnreadableError struct {
	Name string
	Err  error // why, naming the object
}

// ErrIncomplete is the Err of an *UnreadableError for a cluster whose directory holds objects (keys, node
// configurations) but no spec: an interrupted create or delete left them.
var ErrIncomplete = errors.New("the cluster has no spec")

func (e *UnreadableError) Error() string {
	if errors.Is(e.Err, ErrIncomplete) {
		return fmt.Sprintf("cluster %s is incomplete: %v. Delete what is left of it (`kubeup delete cluster %s --yes`), or give it a spec (`kubeup replace -f FILE`)",
			e.Name, e.Err, e.Name)
	}
	return fmt.Sprintf("cluster %s: its stored spec cannot be read (if a newer kubeup wrote it, upgrade kubeup; otherwise replace it with a valid spec, `kubeup replace -f FILE`, or delete the cluster, `kubeup delete cluster %s`): %v",
		e.Name, e.Name, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Get reads a cluster's spec. A spec that does not decode (strictly, as a file would be) is an *UnreadableError.
func (cs *Clusters) Get(ctx context.Context, name string) (*Stored, error) {
	raw, gen, err := cs.read(ctx, name)
	if err != nil {
		return nil, err
	}
	return cs.decodeStored(ctx, name, raw, gen)
}

// decodeStored decodes a cluster's spec object. A spec an older kubeup wrote holds the Cluster alone, its
// instance groups in objects of their own (<cluster>/instancegroup/<name>): they are read as part of it, and the
// next change of the spec writes them into its one object (and removes the old ones).
func (cs *Clusters) decodeStored(ctx context.Context, name string, raw []byte, gen statestore.Generation) (*Stored, error) {
	s, err := cs.decode(name, raw, gen)
	if err != nil || len(s.InstanceGroups) > 0 {
		return s, err
	}
	paths, err := cs.Store.List(ctx, path.Join(name, "instancegroup"))
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		data, err := cs.Store.ReadFile(ctx, p)
		if err != nil {
			return nil, err
		}
		objs, err := model.Decode(cs.location(p), data)
		if err == nil && (objs.Cluster != nil || len(objs.InstanceGroups) != 1) {
			err = fmt.Errorf("%s: want exactly one InstanceGroup", cs.location(p))
		}
		if err != nil {
			return nil, &UnreadableError{Name: name, Err: err}
		}
		s.InstanceGroups = append(s.InstanceGroups, objs.InstanceGroups[0])
		s.legacy = append(s.legacy, p)
	}
	if err := duplicateGroups(cs.location(path.Join(name, "instancegroup")), s.InstanceGroups); err != nil {
		return nil, &UnreadableError{Name: name, Err: err}
	}
	slices.SortFunc(s.InstanceGroups, func(a, b *model.InstanceGroup) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	if s.encoded, err = encodeObjects(objects(s.Cluster, s.InstanceGroups)); err != nil {
		return nil, err
	}
	return s, nil
}

// read returns a cluster's spec object as it is stored.
func (cs *Clusters) read(ctx context.Context, name string) ([]byte, statestore.Generation, error) {
	if err := checkName(name); err != nil {
		return nil, "", err
	}
	raw, gen, err := cs.Store.Read(ctx, specPath(name))
	if !errors.Is(err, fs.ErrNotExist) {
		return raw, gen, err
	}
	left, err := cs.Store.List(ctx, name)
	if err != nil {
		return nil, "", err
	}
	if len(left) == 0 {
		return nil, "", &NotFoundError{Name: name, Store: cs.Store.URL()}
	}
	return nil, statestore.Absent, &UnreadableError{Name: name, Err: fmt.Errorf("%w (%s): its directory holds %d objects, such as %s, an interrupted create or delete left them",
		ErrIncomplete, cs.location(specPath(name)), len(left), cs.location(left[0]))}
}

func (cs *Clusters) decode(name string, raw []byte, gen statestore.Generation) (*Stored, error) {
	loc := cs.location(specPath(name))
	objs, err := model.Decode(loc, raw)
	if err != nil {
		return nil, &UnreadableError{Name: name, Err: err}
	}
	switch {
	case objs.Cluster == nil:
		err = fmt.Errorf("%s: no Cluster in it", loc)
	case objs.Cluster.Metadata.Name != name:
		err = fmt.Errorf("%s: metadata.name is %q, but the cluster is %q", loc, objs.Cluster.Metadata.Name, name)
	default:
		err = duplicateGroups(loc, objs.InstanceGroups)
	}
	if err != nil {
		return nil, &UnreadableError{Name: name, Err: err}
	}
	c, igs := withoutResourceVersion(objs.Cluster, objs.InstanceGroups)
	return newStored(c, igs, gen, raw)
}

// newStored is the Stored of c and igs (in their stored form), read or written at gen as raw.
func newStored(c *model.Cluster, igs []*model.InstanceGroup, gen statestore.Generation, raw []byte) (*Stored, error) {
	encoded, err := encodeObjects(objects(c, igs))
	if err != nil {
		return nil, err
	}
	return &Stored{Cluster: c, InstanceGroups: igs, Generation: gen, raw: raw, encoded: encoded}, nil
}

// Complete returns the complete, validated spec of a stored cluster.
func (cs *Clusters) Complete(s *Stored) (*model.Cluster, []*model.InstanceGroup, error) {
	c, igs := model.Complete(s.Cluster, s.InstanceGroups)
	source := fmt.Sprintf("cluster %s in %s", s.Cluster.Metadata.Name, cs.Store.URL())
	if err := model.Validate(source, c, igs); err != nil {
		return nil, nil, err
	}
	return c, igs, nil
}

// Create writes a new cluster. It sets spec.configBase, validates the complete spec (every problem at once,
// naming source) and refuses a cluster that exists already. Nothing is written when it fails.
func (cs *Clusters) Create(ctx context.Context, source string, c *model.Cluster, igs []*model.InstanceGroup) error {
	_, err := cs.write(ctx, source, c, igs, statestore.Absent)
	var raced *racedError
	if errors.As(err, &raced) {
		return fmt.Errorf("cluster %q already exists in %s (%w): change it with `kubeup edit cluster` or `kubeup replace -f`, or delete it first",
			c.Metadata.Name, cs.Store.URL(), raced.err)
	}
	return err
}

// ReplaceOptions say how Replace treats objects that were read before someone else changed them.
type ReplaceOptions struct {
	// Force writes the objects even when their metadata.resourceVersion says they were read before someone else
	// changed them, overwriting that change.
	Force bool
	// Cluster, when set, is the cluster the objects must be for (kubeup replace --name), and the cluster of
	// InstanceGroups that do not name theirs (metadata.labels[kubeup.dev/cluster]).
	Cluster string
}

// Replaced says what Replace did.
type Replaced struct {
	// Cluster is the name of the cluster that was replaced.
	Cluster string
	// Stored is the cluster as it is now stored.
	Stored *Stored
	// Unchanged says that the store held what objs hold already: nothing was written.
	Unchanged bool
	// Kept are the instance groups of the stored spec that the new one did not name, and that were kept.
	Kept []string
	// Added are the instance groups of objs that the stored spec did not have.
	Added []string
	// Unreadable is why the replaced spec could not be read, or nil. Then nothing of it was kept.
	Unreadable error
}

// Replace writes objs over a stored cluster: its Cluster, when objs hold one, and its instance groups; the stored
// instance groups that objs do not name are kept. Objects without a Cluster are instance groups of the cluster
// they name (model.Objects.ClusterName), or of o.Cluster; then the stored Cluster is kept. A change of the
// cluster's etcd membership is refused, with a Cluster or without (checkEtcdMembership). The combined result is
// validated first, and written in one conditional write: all or nothing. When the store already holds what objs
// hold, nothing is written (Replaced.Unchanged).
//
// Each of objs carries the version it was read at as metadata.resourceVersion (kubeup get prints it). When one
// does, and that object has changed since (and is not stored as objs hold it already), Replace refuses with a
// *ConflictError rather than silently revert that change, unless o.Force. A change of another object of the
// cluster (one objs do not hold) does not concern it. Objects without one (a hand-written spec) replace
// unconditionally, as kubectl replace does. When someone else writes the spec between Replace's read and its
// write, Replace decides again on what they wrote (retryRaced). A cluster whose stored spec cannot be read (see
// UnreadableError) is replaced whole, by a file that holds its Cluster.
func (cs *Clusters) Replace(ctx context.Context, source string, objs *model.Objects, o ReplaceOptions) (*Replaced, error) {
	name, err := ClusterOf(source, objs, o.Cluster)
	if err != nil {
		return nil, err
	}
	var r *Replaced
	err = cs.retryRaced(ctx, func() error {
		var err error
		r, err = cs.replaceOnce(ctx, source, name, objs, o.Force)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// replaceOnce is one try of Replace: it reads the cluster named name, decides and writes.
func (cs *Clusters) replaceOnce(ctx context.Context, source, name string, objs *model.Objects, force bool) (*Replaced, error) {
	var stored *Stored
	var unreadable *UnreadableError
	raw, gen, err := cs.read(ctx, name)
	if err == nil { // else incomplete (an *UnreadableError), or not there
		stored, err = cs.decodeStored(ctx, name, raw, gen)
	}
	if err != nil && !errors.As(err, &unreadable) {
		return nil, err
	}
	r := &Replaced{Cluster: name}
	if unreadable != nil {
		// No object of it can be compared: the file must have been read at the spec's generation.
		if rv := readAt(objs); rv != "" && rv != string(gen) && !force {
			return nil, fmt.Errorf("cluster %s was changed by someone else since %s was read (%w: its metadata.resourceVersion is %s, and the stored spec cannot be read now): nothing was written. "+
				"Replace it with a spec of your own without resourceVersion, or replace with --force",
				name, source, statestore.ErrConflict, rv)
		}
		if objs.Cluster == nil {
			return nil, fmt.Errorf("%s holds instance groups only, and %w: nothing was written; replace the cluster whole, with a file that holds its Cluster too", source, unreadable)
		}
		r.Unreadable = unreadable.Err
		r.Stored, err = cs.write(ctx, source, objs.Cluster, objs.InstanceGroups, gen)
		r.Added = groupNames(objs.InstanceGroups)
		return r, err
	}
	if !force {
		if err := cs.conflicts(source, stored, objs); err != nil {
			return nil, err
		}
	}
	c := objs.Cluster
	if c == nil {
		c = stored.Cluster
	}
	if c.Metadata.Name == stored.Cluster.Metadata.Name { // (replace refuses another name)
		if err := cs.checkEtcdMembership(ctx, source, c, merged(stored, objs.InstanceGroups)); err != nil {
			return nil, err
		}
	}
	for _, ig := range objs.InstanceGroups {
		if findGroup(stored.InstanceGroups, ig.Metadata.Name) == nil {
			r.Added = append(r.Added, ig.Metadata.Name)
		}
	}
	var changed bool
	r.Stored, r.Kept, changed, err = cs.replace(ctx, source, stored, c, objs.InstanceGroups)
	r.Unchanged = !changed
	return r, err
}

// readAt is the first metadata.resourceVersion of objs, or "".
func readAt(objs *model.Objects) string {
	if objs.Cluster != nil && objs.Cluster.Metadata.ResourceVersion != "" {
		return objs.Cluster.Metadata.ResourceVersion
	}
	for _, ig := range objs.InstanceGroups {
		if ig.Metadata.ResourceVersion != "" {
			return ig.Metadata.ResourceVersion
		}
	}
	return ""
}

// ClusterOf is the cluster objs (read from source) are for: the one they name (model.Objects.ClusterName), else
// want; when both are set, they must be the same.
func ClusterOf(source string, objs *model.Objects, want string) (string, error) {
	name := objs.ClusterName()
	switch {
	case name != "" && want != "" && name != want:
		return "", fmt.Errorf("%s holds cluster %q, not %q: nothing was written", source, name, want)
	case name != "":
		if err := checkName(name); err != nil {
			return "", fmt.Errorf("%s: metadata.labels[%s] (or the Cluster's metadata.name): %w", source, model.LabelCluster, err)
		}
		return name, nil
	case want != "":
		return want, nil
	}
	return "", fmt.Errorf("%s holds instance groups that do not name their cluster: add metadata.labels[%s]: CLUSTER to them (`kubeup get instancegroups` prints it), or name the cluster with --name CLUSTER",
		source, model.LabelCluster)
}

// replace writes c and igs over s, keeping the instance groups of s that igs does not name, on the condition
// that the cluster is still at s.Generation. changed is false when s holds them already (nothing was written).
func (cs *Clusters) replace(ctx context.Context, source string, s *Stored, c *model.Cluster, igs []*model.InstanceGroup) (written *Stored, kept []string, changed bool, err error) {
	if c.Metadata.Name != s.Cluster.Metadata.Name {
		return nil, nil, false, fmt.Errorf("%s: metadata.name %q is not the cluster being replaced, %q", source, c.Metadata.Name, s.Cluster.Metadata.Name)
	}
	all := merged(s, igs)
	for _, ig := range all[len(igs):] {
		kept = append(kept, ig.Metadata.Name)
	}
	written, changed, err = cs.writeOver(ctx, source, s, c, all)
	return written, kept, changed, err
}

// merged is igs, then the instance groups of s that igs does not name.
func merged(s *Stored, igs []*model.InstanceGroup) []*model.InstanceGroup {
	all := slices.Clone(igs)
	for _, old := range s.InstanceGroups {
		if findGroup(igs, old.Metadata.Name) == nil {
			all = append(all, old)
		}
	}
	return all
}

// writeOver writes c and igs (all of the cluster's instance groups) over s, on the condition that the cluster is
// still at s.Generation, and removes the objects of the older layout s was read from. When s holds c and igs
// already, it writes nothing and returns s, changed false.
func (cs *Clusters) writeOver(ctx context.Context, source string, s *Stored, c *model.Cluster, igs []*model.InstanceGroup) (written *Stored, changed bool, err error) {
	c, igs, data, err := cs.encode(source, c, igs)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(data, s.raw) && len(s.legacy) == 0 {
		return s, false, nil
	}
	if written, err = cs.put(ctx, c, igs, data, s.Generation); err != nil {
		return nil, false, err
	}
	for _, p := range s.legacy { // their groups are in the spec's object now: never read again
		if err := cs.Store.Delete(ctx, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("the spec of cluster %s was written; removing %s, which the older layout used and nothing reads now: %w",
				c.Metadata.Name, cs.location(p), err)
		}
	}
	return written, true, nil
}

// write validates a cluster's spec and writes it, in one object, on the condition that the object is still at
// generation ifGen (statestore.Absent: that it does not exist). When it is not, the error is a *racedError.
func (cs *Clusters) write(ctx context.Context, source string, c *model.Cluster, igs []*model.InstanceGroup, ifGen statestore.Generation) (*Stored, error) {
	c, igs, data, err := cs.encode(source, c, igs)
	if err != nil {
		return nil, err
	}
	return cs.put(ctx, c, igs, data, ifGen)
}

// encode validates a cluster's spec (check) and returns it in its stored form, and the object that holds it.
func (cs *Clusters) encode(source string, c *model.Cluster, igs []*model.InstanceGroup) (*model.Cluster, []*model.InstanceGroup, []byte, error) {
	name := c.Metadata.Name
	c, igs, err := cs.check(source, c, igs)
	if err != nil {
		return nil, nil, nil, err
	}
	data, err := model.Encode(objects(c, igs)...)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(data) > model.MaxSpecBytes {
		return nil, nil, nil, fmt.Errorf("%s: the spec of cluster %s would be %d bytes, over the limit of %d bytes for a spec: nothing was written",
			source, name, len(data), model.MaxSpecBytes)
	}
	return c, igs, data, nil
}

// put writes data, the spec of c and igs, on the condition that its object is still at generation ifGen. When
// it is not, the error is a *racedError.
func (cs *Clusters) put(ctx context.Context, c *model.Cluster, igs []*model.InstanceGroup, data []byte, ifGen statestore.Generation) (*Stored, error) {
	name := c.Metadata.Name
	gen, err := cs.Store.WriteIf(ctx, specPath(name), data, ifGen)
	if errors.Is(err, statestore.ErrConflict) {
		return nil, &racedError{name: name, err: err}
	}
	if err != nil {
		return nil, err
	}
	return newStored(c, igs, gen, data)
}

// check validates a cluster's spec as write would write it, and returns it in the form it is stored in: without
// what is never stored (metadata.resourceVersion, the instance groups' LabelCluster), spec.configBase set, the
// groups sorted by name.
func (cs *Clusters) check(source string, c *model.Cluster, igs []*model.InstanceGroup) (*model.Cluster, []*model.InstanceGroup, error) {
	if err := checkName(c.Metadata.Name); err != nil {
		return nil, nil, err
	}
	if err := duplicateGroups(source, igs); err != nil {
		return nil, nil, err
	}
	if err := refuseComplete(source, c, igs); err != nil {
		return nil, nil, err
	}
	c, igs = cs.normalize(c, igs)
	slices.SortFunc(igs, func(a, b *model.InstanceGroup) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	full, fullIGs := model.Complete(c, igs)
	if err := model.Validate(source, full, fullIGs); err != nil {
		return nil, nil, err
	}
	return c, igs, nil
}

// refuseComplete refuses objects marked model.AnnotationComplete: the complete spec `kubeup get --full` prints.
// Stored, it would set every derived value by hand, and a later change of what they derive from (a
// kubernetesVersion bump) would leave them as they are (every component's image at the old version).
func refuseComplete(source string, c *model.Cluster, igs []*model.InstanceGroup) error {
	var marked []string
	if _, ok := c.Metadata.Annotations[model.AnnotationComplete]; ok {
		marked = append(marked, "the Cluster")
	}
	for _, ig := range igs {
		if _, ok := ig.Metadata.Annotations[model.AnnotationComplete]; ok {
			marked = append(marked, "InstanceGroup "+ig.Metadata.Name)
		}
	}
	if len(marked) == 0 {
		return nil
	}
	return fmt.Errorf("%s: metadata.annotations[%s] of %s: this is the complete spec `kubeup get --full` prints, every default filled in; "+
		"stored, it would pin every derived value (a later kubernetesVersion would leave every component's image at the old version), so nothing was written. "+
		"Edit the spec itself instead: `kubeup get cluster %s -o yaml > spec.yaml` (without --full), change it, and `kubeup replace -f spec.yaml`",
		source, model.AnnotationComplete, strings.Join(marked, ", "), c.Metadata.Name)
}

// normalize returns copies of c and igs in their stored form: without metadata.resourceVersion and the groups'
// model.LabelCluster (withoutResourceVersion), and with the Cluster's spec.configBase, which is always this
// store's directory of it.
func (cs *Clusters) normalize(c *model.Cluster, igs []*model.InstanceGroup) (*model.Cluster, []*model.InstanceGroup) {
	c, igs = withoutResourceVersion(c, igs)
	c.Spec.ConfigBase = cs.configBase(c.Metadata.Name)
	return c, igs
}

// withoutResourceVersion returns copies of c and igs without what is never stored: metadata.resourceVersion,
// and the instance groups' model.LabelCluster (a group is stored inside its cluster's spec).
func withoutResourceVersion(c *model.Cluster, igs []*model.InstanceGroup) (*model.Cluster, []*model.InstanceGroup) {
	cc := *c
	cc.Metadata.ResourceVersion = ""
	out := make([]*model.InstanceGroup, len(igs))
	for i, ig := range igs {
		g := *ig
		g.Metadata.ResourceVersion = ""
		if _, ok := g.Metadata.Labels[model.LabelCluster]; ok {
			g.Metadata.Labels = maps.Clone(g.Metadata.Labels)
			delete(g.Metadata.Labels, model.LabelCluster)
			if len(g.Metadata.Labels) == 0 {
				g.Metadata.Labels = nil
			}
		}
		out[i] = &g
	}
	return &cc, out
}

func duplicateGroups(source string, igs []*model.InstanceGroup) error {
	seen := map[string]bool{}
	for _, ig := range igs {
		if seen[ig.Metadata.Name] {
			return fmt.Errorf("%s: instance group %q is given twice", source, ig.Metadata.Name)
		}
		seen[ig.Metadata.Name] = true
	}
	return nil
}

// objects lists a cluster (if any) and its instance groups, in that order.
func objects(c *model.Cluster, igs []*model.InstanceGroup) []any {
	objs := []any{}
	if c != nil {
		objs = append(objs, c)
	}
	for _, ig := range igs {
		objs = append(objs, ig)
	}
	return objs
}

// configBase is the URL of a cluster's directory in the store.
func (cs *Clusters) configBase(name string) string {
	return strings.TrimSuffix(cs.Store.URL(), "/") + "/" + name
}

func (cs *Clusters) location(p string) string {
	return strings.TrimSuffix(cs.Store.URL(), "/") + "/" + p
}

// checkName refuses a name that is not a cluster name (model.ValidClusterName) before it is used to find
// anything in the store: a path of the store is never built from it.
func checkName(name string) error {
	if name == "" {
		return errors.New("a cluster name is required (for example demo.example.com)")
	}
	if err := model.ValidClusterName(name); err != nil {
		return fmt.Errorf("%s is not a cluster name: %w", model.Echo(name), err)
	}
	return nil
}
