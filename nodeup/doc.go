// Package nodeup is the node's side of kubeup: it loads the node configuration that `kubeup update cluster`
// wrote (a file, or an object in an s3:// or gs:// state store), verifies it against the sha256 on its first
// line and validates it (model.DecodeNodeConfigObject), builds the node task graph with nodegraph.BuildNodeGraph and
// converges the node with the engine: a dry run that prints the plan, or an apply. Its world is a
// nodetasks.Node: a filesystem root and, when a systemd runs there, its D-Bus connection.
//
// A configuration that does not match its sha256 yet (a copy still being written) is read again for up to
// Options.ConfigWait. A bad configuration (missing, damaged after that wait, undecodable, invalid) is a
// *ConfigError returned before anything under the root is read or written; it is never retried. Any other
// failure is retried as Options.Retries says.
//
// With InstallSystemdUnit, nodeup also installs itself (Executable, its one task type) and the oneshot unit
// kubeup-nodeup.service that runs it at every boot, in the same graph: idempotent and dry-runnable like the rest.
//
// nodeup imports the engine, model, tasks/nodetasks and statestore (to read the state store). It must
// not import the rest of cloudup, protokube or cmd.
package nodeup
