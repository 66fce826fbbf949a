package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
			code := run(context.Background(), tt.args, &out, &errOut, nil)
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
