package cloudup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// localProvider is the local cloud's provider: volumes in a pool directory, DNS in a zone file (docs/architecture.md).
// It is built in: it needs no SDK, and cloudup's own tests run the common code on it.
type localProvider struct{}

func init() { RegisterProvider(model.CloudLocal, localProvider{}) }

func (localProvider) Update(ctx context.Context, cs *Clusters, stored *Stored, c *model.Cluster, igs []*model.InstanceGroup, o UpdateOptions) (*engine.Plan, error) {
	cloud, err := openLocal(c, cs)
	if err != nil {
		return nil, err
	}
	last, err := cs.localCloudState(ctx, c)
	if err != nil {
		return nil, err
	}
	build := func() (*engine.Graph[*localtasks.Cloud], error) { return cloudgraph.BuildLocalCloudGraph(c, igs, last) }
	return RunUpdate(ctx, cs, stored, c, igs, o, cloud, build, nil)
}

func (localProvider) WriteGraph(w io.Writer, c *model.Cluster, igs []*model.InstanceGroup) error {
	graph, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{})
	if err != nil {
		return err
	}
	return graph.WriteDOT(w)
}

// DeleteOwned lists the cluster's volumes in the pool and its DNS records in the zone file (and in the zone file
// the last update wrote, when the spec names another since); the cleanup deletes them, its machines' records
// and the directories they leave empty.
func (localProvider) DeleteOwned(ctx context.Context, cs *Clusters, c *model.Cluster, o DeleteOptions) ([]string, func() ([]string, error), error) {
	name := c.Metadata.Name
	var cloudKeys []string
	if c.Spec.Local == nil || c.Spec.Local.PoolDir == "" {
		return nil, nil, fmt.Errorf("cluster %s: spec.local.poolDir is not set: cannot find the cluster's volumes", name)
	}
	cloud, err := openLocal(c, cs)
	if err != nil {
		return nil, nil, err
	}
	// The DNS records of another cluster named under this one (eu.prod.example.com under prod.example.com)
	// are that cluster's.
	others, err := cs.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A volume a node still holds is refused: the dry run marks it, and --yes deletes nothing at all (the
	// cleanup below checks again, under the pool's lock).
	if cloudKeys, err = cloud.DeleteOwned(ctx, name, others, true); err != nil {
		var held *localtasks.HeldVolumesError
		if o.Apply || !errors.As(err, &held) {
			return nil, nil, fmt.Errorf("deleting cluster %s: %w", name, err)
		}
		cloudKeys = markHeld(cloudKeys, held)
	}
	// The zone file the last update wrote, when the spec names another since (spec.local.zoneFile changed,
	// not yet applied): its records of the cluster go too.
	old, err := cs.oldZoneFile(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if old != nil {
		keys, err := old.DeleteCluster(ctx, name, others, true)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range keys {
			cloudKeys = append(cloudKeys, k+" (in "+old.Path()+")")
		}
	}
	cleanup := func() ([]string, error) {
		if _, err := cloud.DeleteOwned(ctx, name, others, false); err != nil {
			return nil, err
		}
		if old != nil {
			if _, err := old.DeleteCluster(ctx, name, others, false); err != nil {
				return nil, err
			}
		}
		machines, err := removeMachineRecords(cloud.Pool, name)
		if err != nil {
			return nil, err
		}
		dirs := []string{filepath.FromSlash(c.Spec.Local.PoolDir), filepath.FromSlash(filepath.Dir(c.Spec.Local.ZoneFile))}
		if old != nil {
			dirs = append(dirs, filepath.Dir(old.Path()))
		}
		removeEmptyDirs(append(dirs, machines)...)
		return cloudKeys, nil
	}
	return cloudKeys, cleanup, nil
}

func (localProvider) OpenRolling(ctx context.Context, cs *Clusters, c *model.Cluster, igs []*model.InstanceGroup) (RollingCloud, error) {
	return openLocalRolling(c, igs, cs.Store)
}

// Zones: the local cloud's zones are names of the user's choosing; nothing to check them against.
func (localProvider) Zones(context.Context, *model.ClusterSpec) (string, []string, error) {
	return "", nil, nil
}

func (localProvider) ZonesNear(string, []string) string { return "" }

// CredentialWarnings: a local kubelet proves its machine's identity with a per-machine credential (docs/pki.md).
func (localProvider) CredentialWarnings(*model.Cluster) []ValidationFailure { return nil }
