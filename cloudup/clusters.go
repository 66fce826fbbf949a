package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/cloudup/statestore"
	"kubeup.dev/kubeup/model"
)

// Clusters reads and writes the clusters of one state store:
//
//	<cluster>/config                  the Cluster as the user wrote it
//	<cluster>/instancegroup/<name>    each InstanceGroup
//	<cluster>/cluster-completed.spec  the complete spec the last update applied
//	<cluster>/nodeup/<group>[.sha256] each group's node configuration, which nodeup reads
//
// Writes of a spec are conditional: the cluster's config object is written first, on the condition that it
// still has the generation that was read (or does not exist, on create). Of two operators changing a cluster at
// once, the second is refused before it writes anything.
type Clusters struct {
	Store statestore.Store
}

// Stored is a cluster as read from the store, with the generations its writes are conditional on.
type Stored struct {
	Cluster        *model.Cluster
	InstanceGroups []*model.InstanceGroup
	gens           map[string]statestore.Generation // by path; absent paths are absent
	raw            map[string][]byte                // what was read, by path
}

// List returns the names of the clusters in the store, sorted.
func (cs *Clusters) List(ctx context.Context) ([]string, error) {
	paths, err := cs.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range paths {
		if dir, file := path.Split(p); file == "config" && dir != "" && !strings.Contains(strings.TrimSuffix(dir, "/"), "/") {
			names = append(names, strings.TrimSuffix(dir, "/"))
		}
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

// Get reads a cluster and its instance groups. Each object is decoded strictly, as a file would be.
func (cs *Clusters) Get(ctx context.Context, name string) (*Stored, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	s := &Stored{gens: map[string]statestore.Generation{}, raw: map[string][]byte{}}
	cfg := model.ConfigPath(name)
	data, gen, err := cs.Store.Read(ctx, cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NotFoundError{Name: name, Store: cs.Store.URL()}
	}
	if err != nil {
		return nil, err
	}
	s.gens[cfg], s.raw[cfg] = gen, data
	objs, err := model.Decode(cs.location(cfg), data)
	if err != nil {
		return nil, err
	}
	if objs.Cluster == nil || len(objs.InstanceGroups) > 0 {
		return nil, fmt.Errorf("%s: want exactly one Cluster", cs.location(cfg))
	}
	s.Cluster = objs.Cluster

	paths, err := cs.Store.List(ctx, path.Join(name, "instancegroup"))
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		data, gen, err := cs.Store.Read(ctx, p)
		if err != nil {
			return nil, err
		}
		s.gens[p], s.raw[p] = gen, data
		objs, err := model.Decode(cs.location(p), data)
		if err != nil {
			return nil, err
		}
		if objs.Cluster != nil || len(objs.InstanceGroups) != 1 {
			return nil, fmt.Errorf("%s: want exactly one InstanceGroup", cs.location(p))
		}
		ig := objs.InstanceGroups[0]
		if want := path.Base(p); ig.Metadata.Name != want {
			return nil, fmt.Errorf("%s: metadata.name is %q, but the object is named %q", cs.location(p), ig.Metadata.Name, want)
		}
		s.InstanceGroups = append(s.InstanceGroups, ig)
	}
	return s, nil
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
	if err := checkName(c.Metadata.Name); err != nil {
		return err
	}
	s := &Stored{gens: map[string]statestore.Generation{}, raw: map[string][]byte{}}
	existing, err := cs.Get(ctx, c.Metadata.Name)
	var nf *NotFoundError
	switch {
	case err == nil && existing != nil:
		return fmt.Errorf("cluster %q already exists in %s: change it with `kubeup edit cluster` or `kubeup replace -f`, or delete it first",
			c.Metadata.Name, cs.Store.URL())
	case err != nil && !errors.As(err, &nf):
		return err
	}
	return cs.write(ctx, source, s, c, igs)
}

// Replace writes new specs over a stored cluster: the cluster (which must be in objs) and the instance groups
// objs holds; instance groups objs does not name are kept. Nothing is written when the result is invalid, or
// when another operator changed the cluster since s was read.
func (cs *Clusters) Replace(ctx context.Context, source string, s *Stored, c *model.Cluster, igs []*model.InstanceGroup) error {
	if c.Metadata.Name != s.Cluster.Metadata.Name {
		return fmt.Errorf("%s: metadata.name %q is not the cluster being replaced, %q", source, c.Metadata.Name, s.Cluster.Metadata.Name)
	}
	merged := slices.Clone(igs)
	for _, old := range s.InstanceGroups {
		if !slices.ContainsFunc(igs, func(ig *model.InstanceGroup) bool { return ig.Metadata.Name == old.Metadata.Name }) {
			merged = append(merged, old)
		}
	}
	slices.SortFunc(merged, func(a, b *model.InstanceGroup) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return cs.write(ctx, source, s, c, merged)
}

// write validates and writes a cluster's specs: config first, conditionally (the lock against a concurrent
// change), then each instance group that changed, conditionally too.
func (cs *Clusters) write(ctx context.Context, source string, s *Stored, c *model.Cluster, igs []*model.InstanceGroup) error {
	name := c.Metadata.Name
	c.Spec.ConfigBase = cs.configBase(name)
	full, fullIGs := model.Complete(c, igs)
	if err := model.Validate(source, full, fullIGs); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, ig := range igs {
		if seen[ig.Metadata.Name] {
			return fmt.Errorf("%s: instance group %q is given twice", source, ig.Metadata.Name)
		}
		seen[ig.Metadata.Name] = true
	}

	type object struct {
		path string
		obj  any
	}
	objs := []object{{model.ConfigPath(name), c}}
	for _, ig := range igs {
		objs = append(objs, object{model.InstanceGroupPath(name, ig.Metadata.Name), ig})
	}
	for _, o := range objs {
		data, err := model.Encode(o.obj)
		if err != nil {
			return err
		}
		if o.path != model.ConfigPath(name) && string(s.raw[o.path]) == string(data) && s.raw[o.path] != nil {
			continue // an unchanged instance group is not written again; config always is: it is the lock
		}
		gen, err := cs.Store.WriteIf(ctx, o.path, data, s.gens[o.path])
		if errors.Is(err, statestore.ErrConflict) {
			return fmt.Errorf("cluster %s was changed by someone else since it was read (%w): nothing more was written; read it again (`kubeup get cluster %s -o yaml`) and redo your change",
				name, err, name)
		}
		if err != nil {
			return err
		}
		s.gens[o.path], s.raw[o.path] = gen, data
	}
	return nil
}

// configBase is the URL of a cluster's directory in the store.
func (cs *Clusters) configBase(name string) string {
	return strings.TrimSuffix(cs.Store.URL(), "/") + "/" + name
}

func (cs *Clusters) location(p string) string {
	return strings.TrimSuffix(cs.Store.URL(), "/") + "/" + p
}

// checkName refuses a cluster name that cannot be a directory of the store before it is used as one.
func checkName(name string) error {
	if name == "" {
		return errors.New("a cluster name is required (for example demo.example.com)")
	}
	if strings.ContainsAny(name, "/\\") || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return fmt.Errorf("%q is not a cluster name: use a DNS name such as demo.example.com", name)
	}
	return nil
}
