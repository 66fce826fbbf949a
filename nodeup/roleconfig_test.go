package nodeup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"
)

// storedConfigs are group's node configuration and its role's as `kubeup update cluster` stores them (every
// keypair pending), and the role's configuration's name.
func storedConfigs(t *testing.T, group string) (conf, role []byte, roleName string) {
	t.Helper()
	c, igs := completeSpec(t, nil)
	for _, ig := range igs {
		if ig.Metadata.Name != group {
			continue
		}
		rc, err := model.NewNodeRoleConfig(c, ig.Spec.Role, model.Issued{})
		if err != nil {
			t.Fatal(err)
		}
		if role, err = rc.Encode(); err != nil {
			t.Fatal(err)
		}
		nc, err := model.NewGroupNodeConfig(ig, role)
		if err != nil {
			t.Fatal(err)
		}
		if conf, err = nc.Encode(); err != nil {
			t.Fatal(err)
		}
		return conf, role, model.RoleConfigName(ig.Spec.Role)
	}
	t.Fatalf("no instance group %q", group)
	return nil, nil, ""
}

// TestRoleConfigBeside: a configuration that names its role's (as kubeup stores them) is read whole from a
// state store or a directory; a control-plane node gets both copies under /etc/kubeup, byte for byte, from which
// protokube reads the same configuration; a second run changes nothing.
func TestRoleConfigBeside(t *testing.T) {
	conf, role, roleName := storedConfigs(t, "control-plane-a")
	whole := func(t *testing.T, nc *model.NodeConfig) {
		t.Helper()
		if nc.Cluster == nil || nc.Protokube == nil || len(nc.Files) == 0 || nc.RoleConfig == nil {
			t.Fatalf("not read whole: cluster %v, protokube %v, %d files", nc.Cluster != nil, nc.Protokube != nil, len(nc.Files))
		}
	}
	for _, b := range storeBackends {
		t.Run(b.scheme, func(t *testing.T) {
			storeURL := b.start(t, noWrap)
			st, err := statestore.Open(context.Background(), storeURL)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.WriteFile(context.Background(), model.RoleConfigPath(testCluster, model.RoleControlPlane), role); err != nil {
				t.Fatal(err)
			}
			nc, err := LoadConfig(context.Background(), putConf(t, storeURL, "control-plane-a", conf), Options{})
			if err != nil {
				t.Fatal(err)
			}
			whole(t, nc)
		})
	}

	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		writeConf(t, dir, roleName, role)
		confPath := writeConf(t, dir, "control-plane-a", conf)
		root := t.TempDir()
		if r := run(t, Options{Conf: confPath, Root: root}); r.runErr != nil {
			t.Fatalf("Run: %v\n%s", r.runErr, r.err)
		}
		for name, want := range map[string][]byte{"node.conf": conf, roleName: role} {
			got, err := os.ReadFile(filepath.Join(root, "etc/kubeup", name))
			if err != nil || string(got) != string(want) {
				t.Errorf("/etc/kubeup/%s is not the stored object, byte for byte (%v)", name, err)
			}
		}
		// What protokube reads: the node's own copies.
		nc, err := LoadConfig(context.Background(), filepath.Join(root, "etc/kubeup/node.conf"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		whole(t, nc)
		if r := run(t, Options{Conf: confPath, Root: root}); r.runErr != nil || !strings.Contains(r.out, "No changes were needed") {
			t.Errorf("second run: %v\n%s", r.runErr, r.out)
		}
	})
}

// TestRoleConfigOutOfStep: a node that reads its configuration and a role's configuration it does not pin (one
// of the two read while `kubeup update --yes` wrote it) waits for the two to agree, then refuses with a
// *ConfigError that names both; one whose role's configuration is missing is refused at once. Nothing under the
// root changes.
func TestRoleConfigOutOfStep(t *testing.T) {
	conf, _, roleName := storedConfigs(t, "control-plane-a")
	t.Run("another role's configuration", func(t *testing.T) {
		// The role's configuration of a later update: whole, but not the one conf pins.
		c, igs := completeSpec(t, func(c *model.Cluster) { c.Spec.DNSZone = "example.org" })
		var ig *model.InstanceGroup
		for _, g := range igs {
			if g.Metadata.Name == "control-plane-a" {
				ig = g
			}
		}
		rc, err := model.NewNodeRoleConfig(c, ig.Spec.Role, model.Issued{})
		if err != nil {
			t.Fatal(err)
		}
		newer, err := rc.Encode()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeConf(t, dir, roleName, newer)
		confPath := writeConf(t, dir, "control-plane-a", conf)
		root := t.TempDir()
		before := treeHash(t, root)
		r := run(t, Options{Conf: confPath, Root: root, Retries: -1, ConfigWait: 10 * time.Millisecond, ConfigPollInterval: time.Millisecond})
		var ce *ConfigError
		if !errors.As(r.runErr, &ce) {
			t.Fatalf("Run error = %v, want a *ConfigError", r.runErr)
		}
		for _, want := range []string{filepath.Join(dir, roleName) + " is ", "but " + confPath + " names", "roleConfig.sha256", "still so after waiting"} {
			if !strings.Contains(r.runErr.Error(), want) {
				t.Errorf("error %q lacks %q", r.runErr, want)
			}
		}
		if !strings.Contains(r.err, "its role's configuration "+filepath.Join(dir, roleName)+" is not the one it pins") {
			t.Errorf("no note of the wait on stderr:\n%s", r.err)
		}
		if got := treeHash(t, root); got != before {
			t.Errorf("the tree changed:\n%s", got)
		}
	})
	t.Run("missing", func(t *testing.T) {
		confPath := writeConf(t, t.TempDir(), "control-plane-a", conf)
		root := t.TempDir()
		r := run(t, Options{Conf: confPath, Root: root, Retries: -1})
		var ce *ConfigError
		if !errors.As(r.runErr, &ce) || !strings.Contains(r.runErr.Error(), roleName+" (roleConfig), which does not exist") {
			t.Errorf("Run error = %v, want a *ConfigError saying %s does not exist", r.runErr, roleName)
		}
	})
}
