package nodeupcli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/model"
)

// writeConf writes the node configuration of a local cluster's control-plane group, as `kubeup update cluster`
// does, and returns its path.
func writeConf(t *testing.T) string {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: "demo.example.com", CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ConfigBase = "file:///var/lib/kubeup/state/demo.example.com"
	c, igs = model.Complete(c, igs)
	obj, err := model.NewNodeConfig(c, igs[0]).Encode()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), igs[0].Metadata.Name)
	if err := os.WriteFile(p, obj, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	conf := writeConf(t)
	// An older kubeup's configuration: no sha256 line, its sha256 in a second object beside it.
	old := filepath.Join(filepath.Dir(conf), "old")
	data, _ := os.ReadFile(conf)
	first, body, _ := strings.Cut(string(data), "\n")
	os.WriteFile(old, []byte(body), 0o600)
	os.WriteFile(old+".sha256", []byte(strings.TrimPrefix(first, "# sha256:")+"\n"), 0o600)
	// A configuration still being copied, after its wait: stopped by the context, since --retries -1 does not apply.
	partial := filepath.Join(filepath.Dir(conf), "partial")
	os.WriteFile(partial, data[:len(data)/2], 0o600)

	sum := strings.TrimPrefix(first, "# sha256:")
	other := strings.Repeat("ab", 32)

	tests := []struct {
		name       string
		args       []string // "ROOT" is replaced by a fresh directory
		wantCode   int
		wantOut    string // in stdout
		wantErr    string // in stderr
		wantNoOut  bool
		wantNoRoot bool // nothing is written under ROOT
		// cancelOnWait cancels the context when nodeup says it waits for a complete configuration.
		cancelOnWait bool
	}{
		{name: "version", args: []string{"version"}, wantOut: "nodeup version dev\n"},
		{name: "help", args: []string{"--help"}, wantOut: "--install-systemd-unit"},
		{name: "no --conf", args: nil, wantCode: 1, wantErr: "Error: --conf is required", wantNoOut: true},
		{name: "unknown flag", args: []string{"--yes"}, wantCode: 1, wantErr: "Error: unknown flag: --yes", wantNoOut: true},
		{name: "bad --retries", args: []string{"--conf", conf, "--retries", "x"}, wantCode: 1, wantErr: `Error: invalid argument "x" for "--retries"`, wantNoOut: true},
		{
			name: "dry run", args: []string{"--conf", conf, "--root", "ROOT", "--dryrun"},
			wantOut: "SystemdService/kubelet.service", wantErr: "nodeup: no systemd runs in", wantNoRoot: true,
		},
		{
			name: "unit, configuration outside the root", args: []string{"--conf=file://" + conf, "--root=ROOT", "--dryrun", "--install-systemd-unit"},
			wantCode: 1, wantErr: "which cannot see --conf " + conf, wantNoOut: true, wantNoRoot: true,
		},
		{name: "apply", args: []string{"--conf", conf, "--root", "ROOT", "--retries", "2"}, wantOut: "Applied 13 change(s):\n", wantErr: "level=INFO"},
		{
			name: "pinned to its configuration", args: []string{"--conf", conf, "--conf-sha256", sum, "--root", "ROOT", "--dryrun"},
			wantOut: "SystemdService/kubelet.service", wantNoRoot: true,
		},
		{
			name: "pinned to another configuration", args: []string{"--conf", conf, "--conf-sha256=" + other, "--root", "ROOT", "--retries", "-1"},
			wantCode: 1, wantErr: "Error: node configuration " + conf + " is " + sum + " (the sha256 on its first line), but this machine was launched for " + other + " (--conf-sha256)",
			wantNoOut: true, wantNoRoot: true,
		},
		{
			name: "bad --conf-sha256", args: []string{"--conf", conf, "--conf-sha256", "sha256:" + sum, "--root", "ROOT"},
			wantCode: 1, wantErr: `Error: --conf-sha256 "sha256:` + sum + `": want the sha256 of the node configuration, 64 hex digits`,
			wantNoOut: true, wantNoRoot: true,
		},
		{
			name: "missing", args: []string{"--conf", conf + "-missing", "--root", "ROOT"},
			wantCode: 1, wantErr: "Error: node configuration " + conf + "-missing does not exist", wantNoOut: true, wantNoRoot: true,
		},
		{
			name: "older format", args: []string{"--conf", old, "--root", "ROOT", "--retries", "-1"},
			wantCode: 1, wantErr: "Error: " + old + ": the first line is not \"# sha256:\"", wantNoOut: true, wantNoRoot: true,
		},
		{
			name: "still being copied", args: []string{"--conf", partial, "--root", "ROOT", "--retries", "-1"}, cancelOnWait: true,
			wantCode: 1, wantErr: "nodeup: node configuration " + partial + ": content does not match its sha256 (a copy still being written?): waiting up to 2m for a complete one\n",
			wantNoOut: true, wantNoRoot: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "ROOT", root)
			}
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr io.Writer = &errOut
			if tt.cancelOnWait {
				stderr = cancelOn{&errOut, "waiting up to", cancel}
			}
			code := Run(ctx, args, &out, stderr)
			if code != tt.wantCode {
				t.Errorf("nodeup %q exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, tt.wantCode, &out, &errOut)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("nodeup %q printed on stdout:\n%s\nwant it to contain %q", args, &out, tt.wantOut)
			}
			if tt.wantNoOut && out.Len() > 0 {
				t.Errorf("nodeup %q printed on stdout:\n%s\nwant nothing", args, &out)
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("nodeup %q printed on stderr:\n%s\nwant it to contain %q", args, &errOut, tt.wantErr)
			}
			if code != 0 && strings.Count(errOut.String(), "Error: ") != 1 {
				t.Errorf("nodeup %q printed on stderr:\n%s\nwant one Error: line", args, &errOut)
			}
			if entries, _ := os.ReadDir(root); tt.wantNoRoot && len(entries) > 0 {
				t.Errorf("nodeup %q wrote under the root: %v", args, entries)
			}
		})
	}
}

// cancelOn writes to w and calls cancel when what it writes contains s.
type cancelOn struct {
	w      io.Writer
	s      string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.s)) {
		c.cancel()
	}
	return c.w.Write(p)
}
