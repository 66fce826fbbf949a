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
		o.VPC = testVPC
		o.Subnets = []string{testSubnet("a"), testSubnet("b"), testSubnet("c")}
		o.NodeupURL, o.NodeupSHA256 = testNodeupURL, testNodeupSHA256
	case CloudGCE:
		o.Zones = []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"}
		o.Project = "kubeup-demo"
		o.Network = testNetwork
		o.Subnetworks = []string{"europe-west1=" + testSubnetwork}
		o.NodeupURL, o.NodeupSHA256 = testNodeupURL, testNodeupSHA256
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

// The aws network and the nodeup of the test specs: what `kubeup create cluster` is given by a development build,
// which carries no nodeup of its own.
const (
	testVPC          = "vpc-0123456789abcdef0"
	testNodeupURL    = "https://downloads.example.com/kubeup/v0.1.0/nodeup-linux-amd64"
	testNodeupSHA256 = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
)

// The gce network of the test specs.
const (
	testNetwork    = "kubeup-net"
	testSubnetwork = "kubeup-europe-west1"
)

// testSubnet is the id of the test subnet of zone us-east-1<zone>.
func testSubnet(zone string) string {
	return "subnet-00000000000000" + map[string]string{"a": "00a", "b": "00b", "c": "00c"}[zone]
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
