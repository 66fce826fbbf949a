package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// movingZoneRecords runs an update of the local cluster c (run), and moves its DNS records out of the zone file
// it used before: when the complete spec the last update applied (model.CompletedSpecPath) kept them in another
// file than c's spec.local.zoneFile (the field changed, or spec.dnsZone from which it defaults), this
// cluster's records in that old file are removed. The update writes them to the new file.
//
// A dry run lists them before its plan (on stderr with -o json) and removes nothing. An apply removes them
// first, under the cluster's lock, then runs the update: an apply that fails afterwards leaves them removed and
// the complete spec as it was, so that running it again finds nothing more to remove and writes the new file;
// the other order would lose the old file's name with the first successful write of the complete spec.
func (cs *Clusters) movingZoneRecords(ctx context.Context, c *model.Cluster, o UpdateOptions, run func() (*engine.Plan, error)) (*engine.Plan, error) {
	old, err := cs.oldZoneFile(ctx, c)
	if err != nil || old == nil {
		if err != nil {
			return nil, err
		}
		return run()
	}
	name := c.Metadata.Name
	others, err := cs.List(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := old.DeleteCluster(ctx, name, others, !o.Apply)
	what := fmt.Sprintf("the zone file cluster %s used before, %s (spec.local.zoneFile is now %s)", name, old.Path(), c.Spec.Local.ZoneFile)
	if err != nil {
		return nil, fmt.Errorf("removing the DNS records of %s: %w", what, err)
	}
	if len(keys) > 0 {
		say := func(verb string) {
			if o.JSON {
				if o.Logger != nil {
					o.Logger.Warn(verb+" the cluster's DNS records from the zone file it used before", "cluster", name, "file", old.Path(), "records", strings.Join(keys, " "))
				}
				return
			}
			fmt.Fprintf(o.Out, "%s from %s:\n", verb, what)
			for _, k := range keys {
				fmt.Fprintf(o.Out, "  %s\n", k)
			}
			fmt.Fprintln(o.Out)
		}
		if o.Apply {
			say("Removed")
		} else {
			say("Will remove")
		}
	}
	return run()
}

// oldZoneFile returns the zone file the last applied complete spec of c kept its records in, when it is not the
// one c names now; nil when it is the same, or when there is no such spec (never applied) or it names none.
func (cs *Clusters) oldZoneFile(ctx context.Context, c *model.Cluster) (*localtasks.ZoneFile, error) {
	p := model.CompletedSpecPath(c.Metadata.Name)
	data, err := cs.Store.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	objs, err := model.Decode(cs.location(p), data)
	if err != nil {
		// What it held cannot be known; this update writes it anew.
		return nil, nil
	}
	prev := objs.Cluster
	if prev == nil || prev.Spec.CloudProvider != model.CloudLocal || prev.Spec.Local == nil || prev.Spec.Local.ZoneFile == "" || prev.Spec.DNSZone == "" {
		return nil, nil
	}
	oldPath := filepath.Clean(filepath.FromSlash(prev.Spec.Local.ZoneFile))
	if c.Spec.Local != nil && oldPath == filepath.Clean(filepath.FromSlash(c.Spec.Local.ZoneFile)) {
		return nil, nil
	}
	return localtasks.NewZoneFile(oldPath, prev.Spec.DNSZone)
}
