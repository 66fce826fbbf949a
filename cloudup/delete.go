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
)

// Delete removes a cluster: what it owns in the cloud (found by its tags, not by the spec, so that a volume the
// spec no longer lists still goes) and then its objects in the state store, config last, so that an interrupted
// delete can be run again. Without apply it only lists what it would delete.
func (cs *Clusters) Delete(ctx context.Context, name string, apply bool, out io.Writer) error {
	stored, err := cs.Get(ctx, name)
	if err != nil {
		return err
	}
	// The complete spec says where the cloud is; a spec that no longer validates must still be deletable.
	c, _ := model.Complete(stored.Cluster, stored.InstanceGroups)

	var cloudKeys []string
	var cleanup func() error
	switch c.Spec.CloudProvider {
	case model.CloudLocal:
		if c.Spec.Local == nil || c.Spec.Local.PoolDir == "" {
			return fmt.Errorf("cluster %s: spec.local.poolDir is not set: cannot find the cluster's volumes", name)
		}
		cloud, err := openLocal(c, cs)
		if err != nil {
			return err
		}
		// The DNS records of another cluster named under this one (eu.prod.example.com under prod.example.com)
		// are that cluster's.
		others, err := cs.List(ctx)
		if err != nil {
			return err
		}
		if cloudKeys, err = cloud.DeleteOwned(ctx, name, others, true); err != nil {
			return err
		}
		cleanup = func() error {
			if _, err := cloud.DeleteOwned(ctx, name, others, false); err != nil {
				return err
			}
			removeEmptyDirs(filepath.FromSlash(c.Spec.Local.PoolDir), filepath.FromSlash(filepath.Dir(c.Spec.Local.ZoneFile)))
			return nil
		}
	default:
		// kubeup cannot update such a cluster yet, so a cluster it never applied (no complete spec in the store)
		// owns nothing in the cloud: its state alone is deleted. One that was applied, by a kubeup that could,
		// is refused rather than have its cloud resources forgotten.
		_, err := cs.Store.ReadFile(ctx, model.CompletedSpecPath(name))
		if err == nil {
			return fmt.Errorf("cluster %s: cloudProvider %s: kubeup cannot delete %s resources yet (its provider is a later issue), and %s was applied: use the kubeup that applied it",
				name, c.Spec.CloudProvider, c.Spec.CloudProvider, name)
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
	// config last: while it exists, the cluster can be found and the delete run again.
	cfg := model.ConfigPath(name)
	files = slices.DeleteFunc(files, func(p string) bool { return p == cfg })
	files = append(files, cfg)

	if !apply {
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
	fmt.Fprintf(out, "Deleted cluster %s\n", name)
	return nil
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
