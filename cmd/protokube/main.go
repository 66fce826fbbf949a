// Command protokube runs on every control-plane node to keep it converged: etcd volumes, manifests, DNS; and, on
// the local provider, on every worker, to keep its routes to the other nodes' pod ranges. This
// build has the local provider only; cmd/protokube-aws and cmd/protokube-gce are the clouds' builds, each linking
// its own cloud's node side and SDK and no other (docs/architecture.md, "Providers").
package main

import "kubeup.dev/kubeup/protokube/protokubecli"

func main() { protokubecli.Main() }
