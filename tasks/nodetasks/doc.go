// Package nodetasks holds the tasks that converge one node: files, downloaded assets, static-pod manifests,
// systemd services and format-and-mount of block devices. Their world is a Node: a root directory ("/" on a
// real node) and, when a systemd runs there, a D-Bus connection to it.
//
// Every task checks its static rules (absolute clean paths, required fields, syntax) in Validate, which the
// engine runs for the whole graph before any task looks at the node: one bad task leaves the node untouched.
//
// Every path a task names is a path on the node, resolved inside Node.Root as a chroot would resolve it, for
// reads, writes and mounts alike: an absolute symbolic link is read as the node would read it, from the root; a
// link whose ".." would climb out of the root is an error that names the link and its target; ".." in a task's
// own path is refused. A read follows a link at the end of the path (inside the root), then opens the file with
// openat2(2) under RESOLVE_IN_ROOT from a descriptor of the root, so that no link swapped in meanwhile leads out;
// a FIFO or a device is never read. Files are written atomically, relative to a descriptor of their directory: a
// temporary file ".NAME.tmp-DIGITS", synced, renamed over the old file (over a symbolic link too: the link is
// replaced, never followed). A writer holds a flock(2) on its temporary file until the rename; a write removes
// the temporary files of that naming of the same file that no live writer holds, the leftovers of killed runs
// (never another file's, which its own task may be writing).
// A SystemdService restarts its service only when what it runs changed: the unit, its drop-ins or the contents
// of the files it declares in DependsOn, judged by content hash (recorded under /var/lib/kubeup/systemd), never
// by modification time. Without a systemd (Node.Systemd nil, as when nodeup converges an image directory) it
// manages unit files and the wants/ symlinks of "enabled" only.
//
// FormatAndMount formats only a device it has read and found blank: blkid's probe ran, read it and found nothing
// (any error, any stderr output refuses), the kernel lists no partitions, and the device reads as zeros (whole up
// to 1 GiB, in samples beyond), as a new cloud volume or sparse image does; both are checked again right before
// mkfs, which discards nothing. Anything else is a
// terminal error that names the device and changes nothing, in the dry run too. It mounts the device node it
// probed onto the mount point opened inside the root (mount --no-canonicalize onto /proc/self/fd/3), in the
// current mount namespace: mounts, like systemd, are the live system's.
//
// The package imports the engine, internal/mountinfo, go-systemd, sigs.k8s.io/yaml and the standard library.
// It must not import model, cloudup, nodeup, protokube or cmd: the model builds these tasks, never the other
// way round.
package nodetasks
