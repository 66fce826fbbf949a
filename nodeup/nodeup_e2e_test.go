//go:build e2e

package nodeup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/model"
)

// stubDaemon stands in for kubelet and protokube, which the root filesystem does not have: it runs until
// stopped, as they do.
const stubDaemon = "#!/bin/sh\nexec sleep infinity\n"

// notifyStub stands in for a Type=notify daemon (containerd): it tells systemd it is ready, as its main process
// (root may send the notification with the PID it names), then runs until stopped.
const notifyStub = "#!/bin/sh\nsystemd-notify --pid=$$ --ready\nexec sleep infinity\n"

// buildNodeup builds the nodeup binary, static, as a node gets it.
func buildNodeup(t *testing.T) string {
	t.Helper()
	e2e.RequireTools(t, "go")
	bin := filepath.Join(t.TempDir(), "nodeup")
	cmd := exec.Command("go", "build", "-o", bin, "kubeup.dev/kubeup/cmd/nodeup")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// put writes a file into the container's root directory (node path p).
func put(t *testing.T, c *e2e.Container, p string, data []byte, mode os.FileMode) {
	t.Helper()
	host := filepath.Join(c.Dir, p)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, data, mode); err != nil {
		t.Fatal(err)
	}
}

// nodeupIn runs nodeup inside the container, in all its namespaces, and returns its output and error.
func nodeupIn(t *testing.T, c *e2e.Container, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return c.Exec(ctx, append([]string{"/root/nodeup"}, args...)...)
}

// TestNodeupE2E runs nodeup inside a booted Debian container with real systemd, as a node runs it at boot
// (containerd, a stand-in, is started before kubelet on every node):
// without the daemons' binaries the services fail and nodeup says which, with their journal; with them, the
// units are installed and enabled, protokube is active, and kubelet is left for protokube to start (on the
// control plane nodeup does not start it); a second run restarts nothing; a changed kubelet flag is written but
// kubelet is not restarted by nodeup on the control plane, and on a Node it restarts kubelet only; and the unit
// --install-systemd-unit installs runs nodeup again through systemd.
func TestNodeupE2E(t *testing.T) {
	e2e.RequireTools(t, "journalctl")
	bin := buildNodeup(t)
	c := e2e.Boot(t)

	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "/root/nodeup", exe, 0o755) // where a boot script downloads it
	put(t, c, "/etc/kubeup/nodeup.conf", nodeConfig(t, "control-plane-a"), 0o600)
	args := []string{"--conf=/etc/kubeup/nodeup.conf", "--install-systemd-unit"}

	t.Run("dry run", func(t *testing.T) {
		out, err := nodeupIn(t, c, append(args, "--dryrun")...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"SystemdService/kubelet.service", "SystemdService/protokube.service",
			"SystemdService/kubeup-nodeup.service", "Executable//usr/local/bin/nodeup"} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run printed:\n%s\nwant it to contain %q", out, want)
			}
		}
		if strings.Contains(out, "no systemd runs") {
			t.Errorf("nodeup did not find the container's systemd:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(c.Dir, "etc/systemd/system/kubelet.service")); err == nil {
			t.Error("the dry run wrote kubelet.service")
		}
	})

	// containerd is there from the start: kubelet's unit comes after containerd runs (a kubelet without its runtime
	// could not run), so a containerd that cannot start would leave kubelet's unit unwritten.
	put(t, c, "/usr/local/bin/containerd", []byte(notifyStub), 0o755)
	t.Run("services that cannot start", func(t *testing.T) {
		// No /usr/local/bin/protokube: the files and units are written, and nodeup fails naming the service,
		// its state and its journal. kubelet, which nodeup does not start on the control plane, is not tried.
		out, err := nodeupIn(t, c, args...)
		if err == nil {
			t.Fatalf("nodeup succeeded without a protokube binary:\n%s", out)
		}
		for _, want := range []string{"Error: ", "SystemdService/protokube.service", "last journal lines"} {
			if !strings.Contains(out, want) {
				t.Errorf("nodeup printed:\n%s\nwant it to contain %q", out, want)
			}
		}
		for _, f := range []string{"etc/default/kubelet", "etc/kubernetes/manifests/kube-apiserver.manifest", "etc/systemd/system/kubelet.service",
			"etc/kubeup/node.conf"} {
			if _, err := os.Stat(filepath.Join(c.Dir, f)); err != nil {
				t.Errorf("a failed service should not stop the rest: %v", err)
			}
		}
		if got := c.Show(t, "kubelet.service", "ActiveState"); got != "inactive" {
			t.Errorf("kubelet.service: ActiveState %q, want inactive: nodeup does not start kubelet on the control plane", got)
		}
	})

	put(t, c, "/usr/local/bin/kubelet", []byte(stubDaemon), 0o755)
	put(t, c, "/usr/local/bin/protokube", []byte(stubDaemon), 0o755)
	// protokube failed fast enough to hit systemd's start limit (5 starts in 10s), which refuses a plain start
	// for the rest of that interval: nodeup resets the failed state itself, as an operator would after fixing the
	// cause.
	if out, err := nodeupIn(t, c, args...); err != nil {
		t.Fatalf("nodeup with the daemons in place: %v\n%s", err, out)
	}
	for _, unit := range []string{"kubelet.service", "protokube.service", "containerd.service", UnitName} {
		if got := c.Show(t, unit, "UnitFileState"); got != "enabled" {
			t.Errorf("%s: UnitFileState %q, want enabled", unit, got)
		}
	}
	// containerd runs on the control plane too: the preloaded images are imported into it before kubelet starts.
	for _, unit := range []string{"protokube.service", "containerd.service"} {
		if got := c.Show(t, unit, "ActiveState"); got != "active" {
			t.Errorf("%s: ActiveState %q, want active", unit, got)
		}
	}
	if got := c.Show(t, "kubelet.service", "ActiveState"); got != "inactive" {
		t.Errorf("kubelet.service: ActiveState %q, want inactive: on the control plane protokube starts kubelet, not nodeup", got)
	}
	installed, err := os.ReadFile(filepath.Join(c.Dir, InstalledBinary))
	if err != nil || string(installed) != string(exe) {
		t.Errorf("%s is not a copy of nodeup (%v)", InstalledBinary, err)
	}
	// What protokube's round does (the protokube here is a stand-in that only sleeps).
	c.MustExec(t, "systemctl", "start", "kubelet.service")
	invKubelet, invProtokube := c.Show(t, "kubelet.service", "InvocationID"), c.Show(t, "protokube.service", "InvocationID")
	invContainerd := c.Show(t, "containerd.service", "InvocationID")

	t.Run("a second run restarts nothing", func(t *testing.T) {
		out, err := nodeupIn(t, c, args...)
		if err != nil || !strings.Contains(out, "No changes were needed") {
			t.Fatalf("second run: %v\n%s", err, out)
		}
		if c.Show(t, "kubelet.service", "InvocationID") != invKubelet || c.Show(t, "protokube.service", "InvocationID") != invProtokube ||
			c.Show(t, "containerd.service", "InvocationID") != invContainerd {
			t.Error("a second run restarted a service")
		}
	})

	t.Run("the boot unit runs nodeup", func(t *testing.T) {
		c.MustExec(t, "systemctl", "start", UnitName)
		if got := c.Show(t, UnitName, "ActiveState"); got != "active" {
			t.Errorf("%s: ActiveState %q, want active (exited)", UnitName, got)
		}
		if got := c.Show(t, UnitName, "Result"); got != "success" {
			t.Errorf("%s: Result %q, want success", UnitName, got)
		}
		journal := c.MustExec(t, "journalctl", "--no-pager", "-u", UnitName)
		if !strings.Contains(journal, "No changes were needed") {
			t.Errorf("journal of %s:\n%s\nwant nodeup's report", UnitName, journal)
		}
		if c.Show(t, "kubelet.service", "InvocationID") != invKubelet {
			t.Error("the boot unit restarted kubelet, though nothing changed")
		}
	})

	t.Run("a changed kubelet flag on the control plane is left to protokube", func(t *testing.T) {
		conf := nodeConfigWith(t, "control-plane-a", func(c *model.Cluster) { c.Spec.Kubelet.MaxPods = ptr[int32](50) })
		put(t, c, "/etc/kubeup/nodeup.conf", conf, 0o600)
		out, err := nodeupIn(t, c, args...)
		if err != nil {
			t.Fatalf("nodeup: %v\n%s", err, out)
		}
		if !strings.Contains(out, "modified File//etc/default/kubelet") {
			t.Errorf("nodeup printed:\n%s\nwant the kubelet flags changed", out)
		}
		if c.Show(t, "kubelet.service", "InvocationID") != invKubelet {
			t.Error("nodeup restarted kubelet on the control plane: that is protokube's job")
		}
		// protokube reads the whole node configuration, which changed: it restarts to read it.
		if !strings.Contains(out, "modified File//etc/kubeup/node.conf") || c.Show(t, "protokube.service", "InvocationID") == invProtokube {
			t.Errorf("nodeup printed:\n%s\nwant protokube's configuration changed, and protokube restarted", out)
		}
		for _, unit := range []string{"kubelet.service", "protokube.service"} {
			if got := c.Show(t, unit, "ActiveState"); got != "active" {
				t.Errorf("%s: ActiveState %q", unit, got)
			}
		}
	})

	t.Run("on a Node, a changed kubelet flag restarts kubelet and protokube, not containerd", func(t *testing.T) {
		// The same machine converges to the Node group: nodeup starts kubelet there, and restarts it for its
		// flags. A Node of a local kubenet cluster runs protokube for its pod routes (model.NodeRunsProtokube),
		// which reads the whole node configuration: it restarts to read it. containerd, whose configuration did
		// not change, is left alone.
		put(t, c, "/etc/kubeup/nodeup.conf", nodeConfig(t, "nodes"), 0o600)
		if out, err := nodeupIn(t, c, args...); err != nil {
			t.Fatalf("nodeup: %v\n%s", err, out)
		}
		inv, invP, invC := c.Show(t, "kubelet.service", "InvocationID"), c.Show(t, "protokube.service", "InvocationID"), c.Show(t, "containerd.service", "InvocationID")
		conf := nodeConfigWith(t, "nodes", func(c *model.Cluster) { c.Spec.Kubelet.MaxPods = ptr[int32](50) })
		put(t, c, "/etc/kubeup/nodeup.conf", conf, 0o600)
		out, err := nodeupIn(t, c, args...)
		if err != nil {
			t.Fatalf("nodeup: %v\n%s", err, out)
		}
		if !strings.Contains(out, "modified File//etc/default/kubelet") || !strings.Contains(out, "modified File//etc/kubeup/node.conf") {
			t.Errorf("nodeup printed:\n%s\nwant the kubelet flags and the node configuration changed", out)
		}
		if c.Show(t, "kubelet.service", "InvocationID") == inv {
			t.Error("kubelet did not restart after its flags changed")
		}
		if c.Show(t, "protokube.service", "InvocationID") == invP {
			t.Error("protokube did not restart after its configuration changed")
		}
		if c.Show(t, "containerd.service", "InvocationID") != invC {
			t.Error("containerd restarted, though its configuration did not change")
		}
		if got := c.Show(t, "kubelet.service", "ActiveState"); got != "active" {
			t.Errorf("kubelet.service: ActiveState %q after the restart", got)
		}
	})

	t.Run("the boot unit waits for a configuration still being copied", func(t *testing.T) {
		// A boot script's copy is half written when the unit starts: nodeup says what it waits for and
		// converges the node once the copy is complete, instead of failing the boot.
		complete := nodeConfigWith(t, "control-plane-a", func(c *model.Cluster) { c.Spec.Kubelet.MaxPods = ptr[int32](60) })
		put(t, c, "/etc/kubeup/nodeup.conf", complete[:len(complete)/2], 0o600)
		c.MustExec(t, "systemctl", "restart", "--no-block", UnitName)
		waitFor(t, func() bool {
			return strings.Contains(c.MustExec(t, "journalctl", "--no-pager", "-u", UnitName), "(a copy still being written?): waiting up to 2m for a complete one")
		}, "nodeup to say it waits for a complete configuration")
		put(t, c, "/etc/kubeup/nodeup.conf.tmp", complete, 0o600)
		if err := os.Rename(filepath.Join(c.Dir, "etc/kubeup/nodeup.conf.tmp"), filepath.Join(c.Dir, "etc/kubeup/nodeup.conf")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return c.Show(t, UnitName, "ActiveState") != "activating" }, UnitName+" to finish")
		if got := c.Show(t, UnitName, "Result"); got != "success" {
			t.Errorf("%s: Result %q, want success\n%s", UnitName, got, c.MustExec(t, "journalctl", "--no-pager", "-u", UnitName))
		}
		if env, err := os.ReadFile(filepath.Join(c.Dir, "etc/default/kubelet")); err != nil || !strings.Contains(string(env), "--max-pods=60") {
			t.Errorf("/etc/default/kubelet (%v):\n%s\nwant --max-pods=60 from the completed configuration", err, env)
		}
	})
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
