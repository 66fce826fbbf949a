package localtasks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"kubeup.dev/kubeup/tasks/dnstasks"
)

// DeleteCluster deletes the records of cluster from the zone file: the record sets (A, AAAA, CNAME, TXT) named
// cluster or ending in ".cluster", except those of the other clusters in others whose names are under
// cluster's, as Cloud.DeleteOwned chooses them. It is how a cluster's records leave a zone file the cluster no
// longer uses (its spec.local.zoneFile changed). It returns their keys, sorted ("DNSRecord/api.demo.example.com/A");
// with dryRun it deletes nothing and returns what it would delete. A file that does not exist holds none. Every
// other record stays; the file is removed when kubeup made it and nothing but its SOA and NS records is left.
func (z *ZoneFile) DeleteCluster(ctx context.Context, cluster string, others []string, dryRun bool) ([]string, error) {
	if err := dnstasks.ValidateName(cluster); err != nil {
		return nil, fmt.Errorf("cluster name: %w", err)
	}
	all, err := z.List(ctx)
	if err != nil {
		return nil, err
	}
	underOther := func(name string) bool {
		return slices.ContainsFunc(others, func(o string) bool {
			return o != cluster && dnstasks.InZone(o, cluster) && dnstasks.InZone(name, o)
		})
	}
	var deleted []string
	var errs []error
	for _, rs := range all {
		if !dnstasks.InZone(rs.Name, cluster) || underOther(rs.Name) {
			continue
		}
		key := dnstasks.RecordKey(rs.Name, rs.Type).String()
		if !dryRun {
			if err := z.Delete(ctx, rs.Name, rs.Type); err != nil {
				errs = append(errs, fmt.Errorf("%s in zone file %s: %w", key, z.path, err))
				continue
			}
		}
		deleted = append(deleted, key)
	}
	slices.Sort(deleted)
	return deleted, errors.Join(errs...)
}
