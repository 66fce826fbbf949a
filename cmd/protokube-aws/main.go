// Command protokube-aws is protokube for AWS instances: the local provider and the aws provider's node side
// (providers/aws/awsnode), which the machines of an aws cluster fetch (spec.assets.protokube's default).
package main

import (
	"kubeup.dev/kubeup/protokube/protokubecli"
	_ "kubeup.dev/kubeup/providers/aws/awsnode"
	_ "kubeup.dev/kubeup/statestore/s3store"
)

func main() { protokubecli.Main() }
