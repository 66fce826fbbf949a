package localtasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"kubeup.dev/kubeup/tasks/dnstasks"
)

// ClusterTag returns the tag that says a volume belongs to cluster: "kubernetes.io/cluster/NAME". Its value is
// "owned" when the cluster made the volume, and deleting the cluster deletes it.
func ClusterTag(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// DeleteOwned deletes what cluster owns in the local cloud: the volumes tagged ClusterTag(cluster)=owned, with
// their claims, and the DNS records (A, AAAA, CNAME, TXT) named cluster or ending in ".cluster", except those of
// the other clusters named in others whose names are under cluster's (deleting prod.example.com leaves the
// records of eu.prod.example.com). It returns their keys, sorted, in the form tasks use
// ("LocalVolume/a.etcd-main.demo.example.com", "DNSRecord/api.demo.example.com/A"). With dryRun it deletes
// nothing and returns what it would delete.
//
// A volume that a node still holds (see Hold) is never deleted: DeleteOwned then deletes nothing at all and
// returns a *HeldVolumesError that names each held volume, its node, loop devices and mounts, and what to do.
// A dry run returns the same error with the keys of everything it would delete. The volumes are checked and
// deleted under the pool's lock, so that a protokube that attaches a volume meanwhile either holds it before
// the check (and the delete refuses) or finds it gone. The lock files of the nodes whose claims it removed are
// removed too, when no process holds them.
//
// Everything else stays: another cluster's volumes, volumes the cluster only shares, records outside the
// cluster's names and records of other types. A failure to delete one thing does not stop the others; every
// failure is returned, joined, with the keys of what was deleted.
func (c *Cloud) DeleteOwned(ctx context.Context, cluster string, others []string, dryRun bool) ([]string, error) {
	if err := dnstasks.ValidateName(cluster); err != nil {
		return nil, fmt.Errorf("cluster name: %w", err)
	}
	underOther := func(name string) bool {
		return slices.ContainsFunc(others, func(o string) bool {
			return o != cluster && dnstasks.InZone(o, cluster) && dnstasks.InZone(name, o)
		})
	}
	unlock := func() {}
	if !dryRun {
		if _, err := os.Stat(c.Pool.dir); err == nil {
			var err error
			if unlock, err = c.Pool.lock(ctx); err != nil {
				return nil, err
			}
			cleanTemps(ctx, c.Pool.dir, isClaimTemp)
		}
	}
	defer func() { unlock() }()
	vols, err := c.Pool.List(ctx, map[string]string{ClusterTag(cluster): "owned"})
	if err != nil {
		return nil, err
	}
	holds, err := c.holds(ctx, vols)
	if err != nil {
		return nil, err
	}
	var held error
	if len(holds) > 0 {
		held = &HeldVolumesError{Pool: c.Pool.dir, Holds: holds}
		if !dryRun {
			return nil, held
		}
	}
	var sets []dnstasks.RecordSet
	if c.Zone != nil {
		all, err := c.Zone.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, rs := range all {
			if dnstasks.InZone(rs.Name, cluster) && !underOther(rs.Name) {
				sets = append(sets, rs)
			}
		}
	}
	var deleted []string
	var errs []error
	var nodes []string // whose claims were removed
	for _, v := range vols {
		key := (&Volume{Name: v.Name}).Key().String()
		if !dryRun {
			cl, _ := c.Pool.readClaim(v.Name) // read by holds: an expired claim, or none
			if err := c.Pool.deleteLocked(ctx, v.Name); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
			if cl != nil {
				nodes = append(nodes, cl.NodeID)
			}
		}
		deleted = append(deleted, key)
	}
	for _, id := range nodes {
		if _, err := c.Pool.RemoveNodeLock(id); err != nil {
			errs = append(errs, err)
		}
	}
	unlock()
	unlock = func() {}
	for _, rs := range sets {
		key := dnstasks.RecordKey(rs.Name, rs.Type).String()
		if !dryRun {
			if err := c.Zone.Delete(ctx, rs.Name, rs.Type); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
		}
		deleted = append(deleted, key)
	}
	slices.Sort(deleted)
	return deleted, errors.Join(append(errs, held)...)
}
