// Package awsprovider is the operator's side of the aws provider: what `kubeup` does on a cluster whose
// spec.cloudProvider is aws (update, graph, delete, rolling-update, the zone check, validation's credential
// warnings) and its cloud graph (BuildCloudGraph: EC2, Auto Scaling and Route53, through tasks/awstasks). It
// registers itself with cloudup in its init: a main links aws by importing it (cmd/kubeup does, blank).
//
// It imports cloudup, cloudup/cloudgraph, model, engine and the task packages; nothing outside the aws provider
// imports it but mains and tests. The node's side (protokube's and nodeup's) is not here.
package awsprovider
