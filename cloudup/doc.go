// Package cloudup is the operator's side of kubeup: the state store (file://, s3://, gs://), the cloud
// providers (aws, gce, local), and the update and delete pipelines that build the cloud task graph from the
// model and run it with the engine.
//
// cloudup must not import nodeup, protokube or cmd: the binaries depend on it, never the other way round.
package cloudup
