package protokubecli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/protokube"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "version", args: []string{"version"}, want: "protokube version dev\n"},
		{name: "help", args: []string{"--help"}, want: "Usage:\n  protokube --conf PATH|URL"},
		{name: "help says what AWS is", args: []string{"--help"}, want: "this node is the EC2 instance the metadata service (IMDSv2) names"},
		{name: "no configuration", args: nil, wantErr: "--conf is required"},
		{name: "a missing configuration is an error of the round", args: []string{"--conf", "/nonexistent/node.conf", "--once", "--node-id", "n1", "--internal-ip", "10.0.0.1"},
			wantErr: "node configuration /nonexistent/node.conf does not exist"},
		{name: "an address that is not IPv4", args: []string{"--conf", "/x", "--once", "--node-id", "n1", "--internal-ip", "fe80::1"},
			wantErr: `--internal-ip "fe80::1": want this node's IPv4 address`},
		{name: "an interval under the minimum", args: []string{"--conf", "/x", "--once", "--node-id", "n1", "--internal-ip", "10.0.0.1", "--interval", "1ns"},
			wantErr: "--interval 1ns is shorter than the minimum, 1s"},
		{name: "a lease under the minimum", args: []string{"--conf", "/x", "--once", "--node-id", "n1", "--internal-ip", "10.0.0.1", "--interval", "1s", "--lease", "2s"},
			wantErr: "--lease 2s is shorter than the minimum, 5s"},
		{name: "an unknown flag", args: []string{"--bogus"}, wantErr: "unknown flag: --bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(context.Background(), tt.args, &out, &errOut, nil)
			if tt.wantErr != "" {
				if code != 1 || !strings.Contains(errOut.String(), tt.wantErr) {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q", code, &errOut, tt.wantErr)
				}
				return
			}
			if code != 0 || !strings.Contains(out.String(), tt.want) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant %q", code, &out, &errOut, tt.want)
			}
		})
	}
}

// TestExitNotControlPlane: protokube exits with protokube.ExitNotControlPlane (not 1, and at once, without
// --once) on a Node group's configuration that gives it nothing to do (on AWS, the cloud routes the pod ranges:
// model.NodeRunsProtokube), and protokube.service does not restart it after that status.
func TestExitNotControlPlane(t *testing.T) {
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudAWS, Zones: []string{"us-east-1a"}, NodeCount: 1,
		VPC: "vpc-0123456789abcdef0", Subnets: []string{"subnet-0000000000000000a"},
		NodeupURL:    "https://downloads.example.com/kubeup/v0.1.0/nodeup-linux-amd64",
		NodeupSHA256: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "s3://kubeup-state/demo.example.com"
	c, igs = model.Complete(c, igs)
	var obj []byte
	for _, ig := range igs {
		if ig.Spec.Role == model.RoleNode {
			if obj, err = model.NewNodeConfig(c, ig).Encode(); err != nil {
				t.Fatal(err)
			}
		}
	}
	conf := filepath.Join(t.TempDir(), "nodes")
	if err := os.WriteFile(conf, obj, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(context.Background(), []string{"--conf", conf, "--root", t.TempDir(), "--node-id", "n1", "--internal-ip", "10.0.0.1"}, &out, &errOut, nil)
	if code != protokube.ExitNotControlPlane || code == 1 || !strings.Contains(errOut.String(), `is of instance group "nodes", role Node`) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d and the refusal", code, &errOut, protokube.ExitNotControlPlane)
	}
	var help bytes.Buffer
	if Run(context.Background(), []string{"--help"}, &help, &help, nil) != 0 || !strings.Contains(help.String(), fmt.Sprintf("Exit status: 0 once stopped by SIGTERM (or after a good round with --once); %d when", code)) {
		t.Errorf("--help does not document exit status %d:\n%s", code, &help)
	}
}
