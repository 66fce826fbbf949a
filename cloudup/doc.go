// Package cloudup is the operator's side of kubeup: the clusters in the state store (file://, s3://, gs://),
// the update, delete and rolling-update pipelines that build the cloud task graph from the model and run it with
// the engine, and the registry of the clouds' providers (Provider, RegisterProvider). The local provider is built
// in; every other cloud's lives in its own package (providers/<cloud>), which registers itself and which the
// main links by importing it.
//
// cloudup must not import nodeup, protokube or cmd: the binaries depend on it, never the other way round; nor a
// cloud's task package (tasks/awstasks, tasks/gcetasks) or SDK: those are its provider's (test/imports).
package cloudup
