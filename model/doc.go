// Package model holds the cluster API types (versioned YAML), their defaulting into a complete spec, validation
// with field paths, component config turned into flags, the node's units and the node configuration: values,
// not tasks. The graphs built from them live beside the code that runs them: the node's in nodeup/nodegraph
// (nodeup and protokube), the cloud's in cloudup/cloudgraph (kubeup).
//
// model is pure: it imports no task package (tasks/...), no cloud SDK (aws-sdk-go-v2, google.golang.org/api,
// gRPC), no go-systemd, and none of cloudup, nodeup, protokube or cmd; test/imports holds it to that. It imports
// engine (for engine.Secret and task keys) and internal/gcelabels (the one encoding of kubeup's tags as GCE
// labels, which validation checks).
package model
