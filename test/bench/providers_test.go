package bench

// The benchmarks run kubeup's update in process on aws and gce clusters: they link those providers, as
// cmd/kubeup does.
import (
	_ "kubeup.dev/kubeup/providers/aws"
	_ "kubeup.dev/kubeup/providers/gce"
)
