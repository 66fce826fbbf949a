package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr bool
	}{
		{name: "version", args: []string{"version"}, want: "protokube version dev\n"},
		{name: "root prints help", args: nil, want: "Usage:\n  protokube [command]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := newRootCommand()
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Execute(%q) error = %v, want error: %v\n%s", tt.args, err, tt.wantErr, &out)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("Execute(%q) printed:\n%s\nwant it to contain %q", tt.args, &out, tt.want)
			}
		})
	}
}
