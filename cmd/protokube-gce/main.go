// Command protokube-gce is protokube for GCE instances: the local provider and the gce provider's node side
// (providers/gce/gcenode), which the machines of a gce cluster fetch (spec.assets.protokube's default).
package main

import (
	"kubeup.dev/kubeup/protokube/protokubecli"
	_ "kubeup.dev/kubeup/providers/gce/gcenode"
	_ "kubeup.dev/kubeup/statestore/gsstore"
)

func main() { protokubecli.Main() }
