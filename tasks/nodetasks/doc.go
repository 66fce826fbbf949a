// Package nodetasks holds the tasks that converge one node: files, downloaded assets, static-pod manifests,
// systemd services and format-and-mount of block devices. Their world is a Node: a root directory ("/" on a
// real node) and, when a systemd runs there, a D-Bus connection to it.
//
// Every path a task names is a path on the node, resolved under Node.Root component by component: ".." and
// symbolic links that would leave the root are refused, and an absolute symbolic link is read as the node would
// read it, relative to the root. Files are written atomically: a temporary file in the same directory, synced,
// then renamed over the old one.
//
// A SystemdService restarts its service only when what it runs changed: the unit, its drop-ins or the contents
// of the files it declares in DependsOn, judged by content hash (recorded under /var/lib/kubeup/systemd), never
// by modification time. Without a systemd (Node.Systemd nil, as when nodeup converges an image directory) it
// manages unit files and the wants/ symlinks of "enabled" only.
//
// FormatAndMount formats only a device that holds neither a filesystem nor a partition table, and mounts in the
// current mount namespace: mounts, like systemd, are the live system's.
//
// The package imports the engine, go-systemd, sigs.k8s.io/yaml and the standard library. It must not import
// model, cloudup, nodeup, protokube or cmd: the model builds these tasks, never the other way round.
package nodetasks
