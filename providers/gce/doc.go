// Package gceprovider is the operator's side of the gce provider: what `kubeup` does on a cluster whose
// spec.cloudProvider is gce (update, graph, delete, rolling-update, the zone check, validation's credential
// warnings) and its cloud graph (BuildCloudGraph: Compute Engine and Cloud DNS, through tasks/gcetasks), with the
// names of what it makes. It registers itself with cloudup in its init: a main links gce by importing it
// (cmd/kubeup does, blank).
//
// It imports cloudup, cloudup/cloudgraph, model, engine and the task packages; nothing outside the gce provider
// imports it but mains and tests. The node's side (protokube's and nodeup's) is not here.
package gceprovider
