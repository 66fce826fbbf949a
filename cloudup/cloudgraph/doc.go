// Package cloudgraph builds the cloud graph of a complete spec, which `kubeup update cluster` runs: what every
// cloud's graph holds (the API's placeholder DNS records, the keystore of tasks/pkitasks, the complete spec and
// the node configurations in the state store), and each provider's own resources: BuildLocalCloudGraph,
// BuildAWSCloudGraph, BuildGCECloudGraph, with the names of what they make.
//
// cloudgraph imports model, engine and the task packages. It must not import cloudup, nodeup, protokube or cmd;
// nodeup and protokube must not import it (test/imports).
package cloudgraph
