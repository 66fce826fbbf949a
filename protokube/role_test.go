package protokube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// groupConf writes the node configuration kubeup writes for instance group group of a local cluster with one
// control-plane node and one Node ("control-plane-a-1", "nodes"), and returns its path.
func groupConf(t *testing.T, group string) string {
	t.Helper()
	return groupConfOf(t, model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}, NodeCount: 1},
		"file:///var/lib/kubeup/state/demo.example.com", group)
}

// awsGroupConf is groupConf of an aws cluster (one zone, us-east-1a).
func awsGroupConf(t *testing.T, group string) string {
	t.Helper()
	return groupConfOf(t, model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudAWS, Zones: []string{"us-east-1a"}, NodeCount: 1,
		VPC: "vpc-0123456789abcdef0", Subnets: []string{"subnet-0000000000000000a"},
		NodeupURL:    "https://downloads.example.com/kubeup/v0.1.0/nodeup-linux-amd64",
		NodeupSHA256: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"}, "s3://kubeup-state/demo.example.com", group)
}

// groupConfOf writes the node configuration of instance group group of the cluster o makes, whose state store is
// configBase, and returns its path.
func groupConfOf(t *testing.T, o model.NewClusterOptions, configBase, group string) string {
	t.Helper()
	c, igs, err := model.NewCluster(o)
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = configBase
	c, igs = model.Complete(c, igs)
	for _, ig := range igs {
		if ig.Metadata.Name == group {
			obj, err := model.NewNodeConfig(c, ig).Encode()
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), group)
			if err := os.WriteFile(p, obj, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no instance group %q", group)
	return ""
}

// TestRefusesAnotherRolesConfiguration: a Node group's configuration that gives protokube nothing to do (on AWS,
// the cloud routes the pod ranges: model.NodeRunsProtokube) ends Run at once with an error that matches
// ErrNotControlPlane and names the file, the group and the fix, although Run is no --once run: protokube
// retried it for ever, logging an error every interval (found by probing).
func TestRefusesAnotherRolesConfiguration(t *testing.T) {
	conf := awsGroupConf(t, "nodes")
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Conf: conf, Root: t.TempDir(), Interval: time.Hour,
			Logger: slog.New(slog.NewTextHandler(&logs, nil)), Node: volumetasks.Holder{NodeID: "n1", InternalIP: "10.0.0.1"}})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("Run still runs a minute after it read a Node group's configuration; its logs:\n%s", logs.String())
	}
	if !errors.Is(err, ErrNotControlPlane) {
		t.Fatalf("Run = %v, want an error matching ErrNotControlPlane", err)
	}
	for _, want := range []string{"node configuration " + conf + ` is of instance group "nodes", role Node, not a control-plane node's`,
		"protokube runs on control-plane nodes only", "point --conf at this control-plane node's configuration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(logs.String(), "round failed") {
		t.Errorf("the refusal was logged as a failed round, to be tried again:\n%s", logs.String())
	}
}
