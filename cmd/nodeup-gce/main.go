// Command nodeup-gce is nodeup for GCE instances, which reads its configuration from the gs:// state store: the
// binary the user data of a gce cluster's machines fetches (spec.nodeup's default), linking that cloud's state
// store and SDK and no other.
package main

import (
	"kubeup.dev/kubeup/nodeup/nodeupcli"
	_ "kubeup.dev/kubeup/statestore/gsstore"
)

func main() { nodeupcli.Main() }
