package model

import "slices"

// PublishedDNSNames are the fully qualified DNS names kubeup and protokube publish for a complete spec: the API's
// public and internal names (update's placeholders, then protokube's records) and every etcd member's name
// (EtcdMemberDNSName). They are the only records of the zone the cluster owns: `kubeup delete cluster` deletes
// these names and nothing else, whatever else is named under the cluster (the user's records, external-dns').
// Sorted, without duplicates or empty names.
func PublishedDNSNames(c *Cluster) []string {
	var names []string
	if c.Spec.API != nil {
		names = append(names, c.Spec.API.PublicName, c.Spec.API.InternalName)
	}
	for _, e := range c.Spec.EtcdClusters {
		for _, m := range e.Members {
			names = append(names, EtcdMemberDNSName(c.Metadata.Name, e.Name, m.Name))
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	slices.Sort(names)
	return slices.Compact(names)
}
