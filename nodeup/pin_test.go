package nodeup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfSHA256: a machine pinned to the configuration it was launched for (--conf-sha256) converges to that
// one, and refuses another, changing nothing and not retrying; the unit it installs is not pinned.
func TestConfSHA256(t *testing.T) {
	obj := nodeConfig(t, "nodes")
	sum := sha256Of(unseal(t, obj))
	other := strings.Repeat("0", 64)

	t.Run("the configuration it was launched for", func(t *testing.T) {
		root := t.TempDir()
		conf := writeConf(t, filepath.Join(root, "etc/kubeup"), "nodes", obj)
		r := run(t, Options{Conf: conf, Root: root, ConfSHA256: strings.ToUpper(sum), InstallSystemdUnit: true, Executable: smallExecutable(t)})
		if r.runErr != nil {
			t.Fatalf("Run: %v", r.runErr)
		}
		unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", UnitName))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/nodeup --conf=/etc/kubeup/nodes\n") {
			t.Errorf("the unit is not the unpinned one:\n%s", unit)
		}
	})

	t.Run("another configuration", func(t *testing.T) {
		root := t.TempDir()
		conf := writeConf(t, t.TempDir(), "nodes", obj)
		before := treeHash(t, root)
		for _, dry := range []bool{true, false} {
			r := run(t, Options{Conf: conf, Root: root, ConfSHA256: other, DryRun: dry, Retries: -1})
			var ce *ConfigError
			if !errors.As(r.runErr, &ce) {
				t.Fatalf("dry run %v: Run error = %v, want a *ConfigError", dry, r.runErr)
			}
			for _, want := range []string{
				"node configuration " + conf + " is " + sum + " (the sha256 on its first line), but this machine was launched for " + other + " (--conf-sha256)",
				"the configuration was written after the machine's launch template",
				"Nothing was changed", "kubeup update cluster --yes", "roll the instance group",
			} {
				if !strings.Contains(r.runErr.Error(), want) {
					t.Errorf("error %q lacks %q", r.runErr, want)
				}
			}
			if r.out != "" {
				t.Errorf("printed on stdout:\n%s", r.out)
			}
		}
		if got := treeHash(t, root); got != before {
			t.Errorf("the tree changed:\n%s", got)
		}
	})

	t.Run("not a sha256", func(t *testing.T) {
		root := t.TempDir()
		conf := writeConf(t, t.TempDir(), "nodes", obj)
		r := run(t, Options{Conf: conf, Root: root, ConfSHA256: "abc"})
		var ce *ConfigError
		if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), `--conf-sha256 "abc": want the sha256 of the node configuration, 64 hex digits`) {
			t.Errorf("Run error = %v", r.runErr)
		}
	})

	t.Run("LoadConfig", func(t *testing.T) {
		conf := writeConf(t, t.TempDir(), "nodes", obj)
		if _, err := LoadConfig(context.Background(), conf, Options{ConfSHA256: " " + sum + "\n"}); err != nil {
			t.Errorf("LoadConfig pinned to its sha256: %v", err)
		}
		if _, err := LoadConfig(context.Background(), conf, Options{ConfSHA256: other}); err == nil {
			t.Error("LoadConfig took another configuration than the pinned one")
		}
	})
}
