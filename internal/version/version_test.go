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
