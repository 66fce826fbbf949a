// Package tasks is the home of kubeup's task types: plain structs that say what should exist, each
// implementing engine.Resource and the Renderer of the target it converges, one task per file. They live in
// subpackages grouped by what they touch: awstasks (EBS volumes and attachments), gcetasks (disks and
// attachments), dnstasks (DNS records over a provider interface), nodetasks (files, static-pod manifests,
// systemd services, format-and-mount) and localtasks (volumes of the local provider).
//
// Task packages import engine and the SDK or system interface they drive. They must not import model, cloudup,
// nodeup, protokube or cmd: the dependency direction is cmd -> cloudup|nodeup|protokube -> model -> tasks ->
// engine.
package tasks
