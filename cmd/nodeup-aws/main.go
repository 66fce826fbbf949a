// Command nodeup-aws is nodeup for AWS instances, which reads its configuration from the s3:// state store: the
// binary the user data of an aws cluster's machines fetches (spec.nodeup's default), linking that cloud's state
// store and SDK and no other.
package main

import (
	"kubeup.dev/kubeup/nodeup/nodeupcli"
	_ "kubeup.dev/kubeup/statestore/s3store"
)

func main() { nodeupcli.Main() }
