package model

import (
	"errors"
	"testing"
)

// userSpec is the spec `kubeup create cluster` writes for a cluster named demo.example.com on cloud with
// controlPlanes control-plane groups and a "nodes" group of 2, with the configBase kubeup would give it.
func userSpec(t testing.TB, cloud string, controlPlanes int) (*Cluster, []*InstanceGroup) {
	t.Helper()
	o := NewClusterOptions{
		Name:              "demo.example.com",
		CloudProvider:     cloud,
		ControlPlaneCount: controlPlanes,
		NodeCount:         2,
	}
	switch cloud {
	case CloudAWS:
		o.Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	case CloudGCE:
		o.Zones = []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"}
		o.Project = "kubeup-demo"
	default:
		o.Zones = []string{"a", "b", "c"}
	}
	c, igs, err := NewCluster(o)
	if err != nil {
		t.Fatalf("NewCluster(%+v): %v", o, err)
	}
	switch cloud {
	case CloudAWS:
		c.Spec.ConfigBase = "s3://kubeup-state/demo.example.com"
	case CloudGCE:
		c.Spec.ConfigBase = "gs://kubeup-state/demo.example.com"
	default:
		c.Spec.ConfigBase = "file:///tmp/s/demo.example.com"
	}
	return c, igs
}

// completeSpec is Complete(userSpec(...)).
func completeSpec(t testing.TB, cloud string, controlPlanes int) (*Cluster, []*InstanceGroup) {
	t.Helper()
	c, igs := Complete(userSpec(t, cloud, controlPlanes))
	return c, igs
}

// problemsOf returns the problems of an *InvalidError, failing the test for any other error.
func problemsOf(t testing.TB, err error) []Problem {
	t.Helper()
	if err == nil {
		return nil
	}
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("error is %T, not *InvalidError: %v", err, err)
	}
	return invalid.Problems
}
