package protokube

// The clouds' node sides, linked into protokube's tests as cmd/protokube-aws and cmd/protokube-gce link them: the
// aws and gce tests run protokube on those clouds' fakes.
import (
	_ "kubeup.dev/kubeup/providers/aws/awsnode"
	_ "kubeup.dev/kubeup/providers/gce/gcenode"
)
