package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// DeleteOptions say how Delete runs.
type DeleteOptions struct {
	// Apply deletes; otherwise Delete only lists what it would delete.
	Apply bool
	// Out receives the report (stdout).
	Out io.Writer
	// Lock says how Delete waits for the cluster's lock while another run holds it (see Lock).
	Lock LockOptions
}

// Delete removes a cluster: what it owns in the cloud (found by its tags, not by the spec, so that a volume the
// spec no longer lists still goes) and then its objects in the state store, its spec last, so that an
// interrupted delete can be run again. Without o.Apply it only lists what it would delete. A cluster whose spec
// cannot be read is deleted too: its cloud is then found from the complete spec its last update applied, and
// when there is none (no update applied it), only its state is deleted. It says so in either case.
func (cs *Clusters) Delete(ctx context.Context, name string, o DeleteOptions) error {
	out := o.Out
	var incomplete *UnreadableError // a directory without a spec: its state is deleted (specToDelete)
	if _, _, err := cs.read(ctx, name); err != nil && !errors.As(err, &incomplete) {
		return err
	}
	unlock := func() error { return nil }
	if o.Apply {
		var err error
		if unlock, err = cs.Lock(ctx, name, "delete --yes", o.Lock); err != nil {
			return err
		}
		defer unlock() // on failure; on success it is released, and its error reported, below
	}
	c, err := cs.specToDelete(ctx, name, out)
	if err != nil {
		return err
	}

	var cloudKeys []string
	var cleanup func() error
	switch {
	case c == nil:
		cleanup = func() error { return nil }
	case providers[c.Spec.CloudProvider] != nil:
		var deleteListed func() ([]string, error)
		if cloudKeys, deleteListed, err = providers[c.Spec.CloudProvider].DeleteOwned(ctx, cs, c, o); err != nil {
			return err
		}
		cleanup = func() (err error) { cloudKeys, err = deleteListed(); return err }
	default:
		// A cloud this kubeup has no provider for (a spec a newer kubeup wrote): this kubeup never applied it,
		// so a cluster never applied (no complete spec in the store) owns nothing in the cloud: its state alone
		// is deleted. One that was applied, by a kubeup that could, is refused rather than have its cloud
		// resources forgotten.
		_, err := cs.Store.ReadFile(ctx, model.CompletedSpecPath(name))
		if err == nil {
			return fmt.Errorf("cluster %s: %w: this kubeup cannot delete %s resources, and %s was applied: use the kubeup that applied it",
				name, unknownProvider(c.Spec.CloudProvider), c.Spec.CloudProvider, name)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		cleanup = func() error { return nil }
	}

	files, err := cs.Store.List(ctx, name)
	if err != nil {
		return err
	}
	// The spec last: while it exists, the cluster can be found and the delete run again. The lock is released
	// after it.
	spec, lock := specPath(name), lockPath(name)
	files = slices.DeleteFunc(files, func(p string) bool { return p == spec || p == lock })
	if incomplete == nil {
		files = append(files, spec)
	}

	if !o.Apply {
		fmt.Fprintf(out, "Will delete cluster %s:\n", name)
		for _, k := range cloudKeys {
			fmt.Fprintf(out, "  %s\n", k)
		}
		for _, f := range files {
			fmt.Fprintf(out, "  StoreFile/%s\n", f)
		}
		fmt.Fprintln(out, "\nMust specify --yes to delete the cluster")
		return nil
	}
	if err := cleanup(); err != nil {
		return fmt.Errorf("deleting cluster %s's cloud resources: %w (the state store is untouched: run the delete again)", name, err)
	}
	for _, k := range cloudKeys {
		fmt.Fprintf(out, "Deleted %s\n", k)
	}
	for _, f := range files {
		if err := cs.Store.Delete(ctx, f); err != nil {
			return fmt.Errorf("deleting cluster %s's state: %w (run the delete again)", name, err)
		}
		fmt.Fprintf(out, "Deleted StoreFile/%s\n", f)
	}
	if err := unlock(); err != nil {
		return err
	}
	fmt.Fprintf(out, "Deleted cluster %s\n", name)
	return nil
}

// An OwnedDeleter is a cloud that deletes what a cluster owns, found by its tags or labels, and the DNS records
// of the names given (awstasks.Cloud, gcetasks.Cloud).
type OwnedDeleter interface {
	DeleteOwned(ctx context.Context, records []string, apply bool) ([]string, error)
	NewRun()
}

// DeleteOwned is a Provider's DeleteOwned on a cloud that finds what a cluster owns by its tags: it lists what
// cloud holds of cluster c (a dry run of cloud.DeleteOwned), and returns those keys and the cleanup that deletes
// them (reporting on out what it deleted before a failure). The records the cluster owns are the names kubeup
// and protokube publish for it, and only those: anything else in the zone, under the cluster's name or not, is
// someone else's. Those of the complete spec the last update applied too, when the spec has changed since
// (another spec.api.publicName not applied yet): the records published under the old names are the cluster's.
func (cs *Clusters) DeleteOwned(ctx context.Context, cloud OwnedDeleter, c *model.Cluster, out io.Writer) ([]string, func() ([]string, error), error) {
	name := c.Metadata.Name
	records := model.PublishedDNSNames(c)
	if data, err := cs.Store.ReadFile(ctx, model.CompletedSpecPath(name)); err == nil {
		if objs, err := model.Decode(cs.location(model.CompletedSpecPath(name)), data); err == nil && objs.Cluster != nil {
			records = append(records, model.PublishedDNSNames(objs.Cluster)...)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	slices.Sort(records)
	records = slices.Compact(records) // the spec's and the applied spec's names are mostly the same
	listed, err := cloud.DeleteOwned(ctx, records, false)
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() ([]string, error) {
		// What is reported is what this deletion deleted (the listing above may have changed since: an
		// instance group's template gone, a record published meanwhile). On a failure, what it did delete is
		// reported before the error.
		cloud.NewRun()
		keys, err := cloud.DeleteOwned(ctx, records, true)
		if err != nil {
			for _, k := range keys {
				fmt.Fprintf(out, "Deleted %s\n", k)
			}
		}
		return keys, err
	}
	return listed, cleanup, nil
}

// specToDelete returns the complete spec that says where the cluster's cloud is, or nil when it owns nothing in
// the cloud. A spec that no longer validates must still be deletable; one that cannot be read at all is replaced
// by the complete spec the last update applied, and out says so.
func (cs *Clusters) specToDelete(ctx context.Context, name string, out io.Writer) (*model.Cluster, error) {
	stored, err := cs.Get(ctx, name)
	var unreadable *UnreadableError
	if !errors.As(err, &unreadable) {
		if err != nil {
			return nil, err
		}
		c, _ := model.Complete(stored.Cluster, stored.InstanceGroups)
		return c, nil
	}
	fmt.Fprintf(out, "The spec of cluster %s cannot be read: %v\n", name, unreadable.Err)
	applied := model.CompletedSpecPath(name)
	data, err := cs.Store.ReadFile(ctx, applied)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "No update applied it (the store holds no complete spec of it), so it owns nothing in the cloud: only its state is deleted.\n"+
			"(Had an update of it been interrupted before its end, the volumes tagged kubernetes.io/cluster/%s=owned and the DNS records under %s that it made could not be found from here.)\n",
			name, name)
		return nil, nil
	}
	if err == nil {
		var objs *model.Objects
		if objs, err = model.Decode(cs.location(applied), data); err == nil && objs.Cluster == nil {
			err = fmt.Errorf("%s: no Cluster in it", cs.location(applied))
		}
		if err == nil {
			fmt.Fprintf(out, "Its cloud resources are found from the complete spec its last update applied, %s.\n", cs.location(applied))
			return objs.Cluster, nil
		}
	}
	return nil, fmt.Errorf("cluster %s: cannot find its cloud resources: its spec cannot be read (%v), nor the complete spec its last update applied (%w). "+
		"Replace its spec with a valid one (`kubeup replace -f FILE`), then delete it", name, unreadable.Err, err)
}

// markHeld marks, in the keys of a dry run, the volumes that nodes hold, which the delete refuses.
func markHeld(keys []string, held *localtasks.HeldVolumesError) []string {
	for _, h := range held.Holds {
		k := slices.Index(keys, (&localtasks.Volume{Name: h.Volume}).Key().String())
		if k >= 0 {
			keys[k] += " (held: " + h.State() + ": the delete refuses it, and deletes nothing, until it is released: " +
				"stop protokube on its node, unmount it and detach its loop device)"
		}
	}
	return keys
}

// removeMachineRecords removes the records nodeup made of the cluster's local machines (rolling_local.go):
// <dir of poolDir>/machines/<cluster>/<node id>.json, then that directory when it is empty, and the lock files
// of those nodes in the pool (localtasks.Pool.LockNode) that no process holds. It returns the machines directory,
// for removeEmptyDirs. Anything else found there stays.
func removeMachineRecords(pool *localtasks.Pool, cluster string) (string, error) {
	machines := filepath.Join(filepath.Dir(pool.Dir()), "machines")
	dir := filepath.Join(machines, cluster)
	records, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", err
	}
	for _, r := range records {
		if _, err := pool.RemoveNodeLock(strings.TrimSuffix(filepath.Base(r), ".json")); err != nil {
			return "", fmt.Errorf("cluster %s: %w", cluster, err)
		}
		if err := os.Remove(r); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("removing the record of a local machine of cluster %s: %w", cluster, err)
		}
	}
	removeEmptyDirs(dir)
	return machines, nil
}

// removeEmptyDirs removes each directory when it is empty, and its parent when that is the default
// <store>-local directory and empty too: the pool and DNS directories the local provider made beside the state
// store. A directory that holds anything stays.
func removeEmptyDirs(dirs ...string) {
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if parent := filepath.Dir(d); strings.HasSuffix(parent, "-local") {
			_ = os.Remove(parent) // fails, harmlessly, while the other directory is still there
		}
	}
}
