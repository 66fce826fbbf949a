package cloudup

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// localCloudState is what the local cloud graph of c needs to know of the cluster as last applied: the zone file
// the last applied complete spec (model.CompletedSpecPath) kept its records in, when it is another than c's
// spec.local.zoneFile now (the field changed, or spec.dnsZone from which it defaults), and the store's clusters.
// The graph then removes the cluster's records from that file (localtasks.FormerZoneFile): a dry run lists them
// as a change like any other, in text and JSON, and the apply removes them before it writes the new complete
// spec.
func (cs *Clusters) localCloudState(ctx context.Context, c *model.Cluster) (cloudgraph.LocalCloudState, error) {
	old, err := cs.oldZoneFile(ctx, c)
	if err != nil || old == nil {
		return cloudgraph.LocalCloudState{}, err
	}
	others, err := cs.List(ctx)
	if err != nil {
		return cloudgraph.LocalCloudState{}, err
	}
	return cloudgraph.LocalCloudState{FormerZoneFile: old.Path(), FormerDNSZone: old.Zone(), OtherClusters: others}, nil
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
	// The last applied spec on another cloud (its spec.local, if any, was never used) kept no records in a zone
	// file; c is the local provider's.
	if prev == nil || prev.Spec.CloudProvider != c.Spec.CloudProvider || prev.Spec.Local == nil || prev.Spec.Local.ZoneFile == "" || prev.Spec.DNSZone == "" {
		return nil, nil
	}
	oldPath := filepath.Clean(filepath.FromSlash(prev.Spec.Local.ZoneFile))
	if c.Spec.Local != nil && oldPath == filepath.Clean(filepath.FromSlash(c.Spec.Local.ZoneFile)) {
		return nil, nil
	}
	return localtasks.NewZoneFile(oldPath, prev.Spec.DNSZone)
}
