// Command nodeup is run on every node at boot to converge it: files, static-pod manifests, systemd units. This
// build reads file:// state stores only (the local provider's); cmd/nodeup-aws and cmd/nodeup-gce are the clouds'
// builds, each linking its own cloud's state store and SDK and no other (docs/architecture.md, "Providers").
package main

import "kubeup.dev/kubeup/nodeup/nodeupcli"

func main() { nodeupcli.Main() }
