package localtasks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/tasks/dnstasks"
)

// ClusterTag returns the tag that says a volume belongs to cluster: "kubernetes.io/cluster/NAME". Its value is
// "owned" when the cluster made the volume, and deleting the cluster deletes it.
func ClusterTag(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// DeleteOwned deletes what cluster owns in the local cloud: the volumes tagged ClusterTag(cluster)=owned, and the
// DNS records (A, AAAA, CNAME, TXT) named cluster or ending in ".cluster", except those of the other clusters
// named in others whose names are under cluster's (deleting prod.example.com leaves the records of
// eu.prod.example.com). It returns their keys, sorted, in the form tasks use
// ("LocalVolume/a.etcd-main.demo.example.com", "DNSRecord/api.demo.example.com/A"). With dryRun it deletes
// nothing and returns what it would delete.
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
	vols, err := c.Pool.List(ctx, map[string]string{ClusterTag(cluster): "owned"})
	if err != nil {
		return nil, err
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
	for _, v := range vols {
		key := (&Volume{Name: v.Name}).Key().String()
		if !dryRun {
			if err := c.Pool.Delete(ctx, v.Name); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
		}
		deleted = append(deleted, key)
	}
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
	return deleted, errors.Join(errs...)
}
