package version

import (
	"bytes"
	"testing"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{args: nil, want: "nodeup version dev\n"},
		{args: []string{"extra"}, wantErr: true},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		cmd := Command("nodeup")
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tt.args)
		err := cmd.Execute()
		if (err != nil) != tt.wantErr {
			t.Fatalf("version %q: error = %v, want error: %v", tt.args, err, tt.wantErr)
		}
		if !tt.wantErr && out.String() != tt.want {
			t.Errorf("version %q printed %q, want %q", tt.args, out.String(), tt.want)
		}
	}
}

// TestNodeupOf: each cloud's nodeup is found in the stamped list; a cloud the build was not stamped for has none.
func TestNodeupOf(t *testing.T) {
	old := Nodeup
	t.Cleanup(func() { Nodeup = old })
	Nodeup = "aws=https://example.com/v1/nodeup-aws-linux-amd64@aa11,gce=https://example.com/a@b/nodeup-gce-linux-amd64@bb22"
	for _, tt := range []struct{ cloud, url, sha string }{
		{"aws", "https://example.com/v1/nodeup-aws-linux-amd64", "aa11"},
		{"gce", "https://example.com/a@b/nodeup-gce-linux-amd64", "bb22"},
		{"local", "", ""},
	} {
		if url, sha := NodeupOf(tt.cloud); url != tt.url || sha != tt.sha {
			t.Errorf("NodeupOf(%s) = %q, %q; want %q, %q", tt.cloud, url, sha, tt.url, tt.sha)
		}
	}
	Nodeup = ""
	if url, sha := NodeupOf("aws"); url != "" || sha != "" {
		t.Errorf("an unstamped build's NodeupOf(aws) = %q, %q; want none", url, sha)
	}
}
