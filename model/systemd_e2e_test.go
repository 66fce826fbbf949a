//go:build e2e

package model_test

import (
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// argvStub stands in for a daemon: it records its arguments, each ended by a NUL byte, in /run/argv-<name>, then
// runs until stopped (or exits at once, for a oneshot unit).
const argvStub = `#!/bin/sh
name=$(basename "$0")
for a in "$@"; do printf '%s\0' "$a"; done > /run/argv-$name.tmp
mv /run/argv-$name.tmp /run/argv-$name
[ "$name" = kubelet ] && exec sleep infinity
exit 0
`

// TestSystemdReadsWhatKubeupWrites has real systemd (Debian 12's) be the referee of the environment file and the
// units kubeup writes: kubelet.service with the /etc/default/kubelet of a node graph gets exactly the spec's
// flags, and every hostile value written by envAssignment and execArg reaches a service as exactly itself.
func TestSystemdReadsWhatKubeupWrites(t *testing.T) {
	c := e2e.Boot(t)
	put := func(p, data string, mode os.FileMode) {
		t.Helper()
		host := filepath.Join(c.Dir, p)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(host, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	argv := func(name string) []string {
		t.Helper()
		var data []byte
		deadline := time.Now().Add(30 * time.Second)
		for {
			var err error
			if data, err = os.ReadFile(filepath.Join(c.Root(), "run", "argv-"+name)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never recorded its arguments: %v\n%s", name, err, c.MustExec(t, "systemctl", "status", "--no-pager", name+".service"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		args := strings.Split(string(data), "\x00")
		return args[:len(args)-1]
	}
	put(model.KubeletBinary, argvStub, 0o755)
	put("/usr/local/bin/echoargs", argvStub, 0o755)

	t.Run("kubelet.service and /etc/default/kubelet", func(t *testing.T) {
		cl, igs := model.CompleteSpec(t, model.CloudLocal, 1)
		cl.Spec.Kubelet.NodeLabels = map[string]string{"example.com/team": "a.b_c-D9", "plain": ""}
		cl.Spec.Kubelet.FeatureGates = map[string]string{"InPlacePodVerticalScaling": "true"}
		cl.Spec.Kubelet.ClusterDNS = "fd00::a"
		cl.Spec.Addons.CoreDNS.Enabled = model.Ptr(false) // no Service of the IPv4 range can take an IPv6 address
		if err := model.Validate("test", cl, igs); err != nil {
			t.Fatal(err)
		}
		nc := model.NewNodeConfig(cl, model.FindInstanceGroup(igs, "control-plane-a"))
		g, err := nodegraph.BuildNodeGraph(nc)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := g.Lookup(engine.Key{Type: "File", Name: model.KubeletEnvFile})
		unit, _ := g.Lookup(engine.Key{Type: "SystemdService", Name: "kubelet.service"})
		runtime, _ := g.Lookup(engine.Key{Type: "SystemdService", Name: model.ContainerdUnit})
		put(model.KubeletEnvFile, *env.(*nodetasks.File).Contents, 0o644)
		put("/etc/systemd/system/kubelet.service", *unit.(*nodetasks.SystemdService).Definition, 0o644)
		// kubelet requires containerd: its unit, with a stand-in that tells systemd it is ready (Type=notify).
		put("/etc/systemd/system/"+model.ContainerdUnit, *runtime.(*nodetasks.SystemdService).Definition, 0o644)
		put(model.ContainerdBinary, "#!/bin/sh\nsystemd-notify --pid=$$ --ready\nexec sleep infinity\n", 0o755)
		c.MustExec(t, "systemctl", "daemon-reload")
		c.MustExec(t, "systemctl", "start", "kubelet.service")
		if got := c.MustExec(t, "systemctl", "show", "--property=ActiveState", "--value", model.ContainerdUnit); strings.TrimSpace(got) != "active" {
			t.Errorf("starting kubelet.service left %s %s, want it started first (Requires=)", model.ContainerdUnit, got)
		}
		want := model.KubeletFlags(nc.Cluster.Spec.Kubelet, nc.InstanceGroup)
		if diff := cmp.Diff(want, argv("kubelet")); diff != "" {
			t.Errorf("kubelet's arguments under systemd (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(append([]string{model.KubeletBinary}, want...), kubeletArgv(t, g)); diff != "" {
			t.Errorf("the test's reader of systemd's syntax disagrees with systemd (-systemd +reader):\n%s", diff)
		}
	})

	var values []string
	for _, v := range append(model.HostileValues, "", " lead", "trail ", "two\n\nlines\n", `\"\\`, "'", "\"", "%%", "$$") {
		if utf8.ValidString(v) && !strings.ContainsRune(v, 0) {
			values = append(values, v)
		}
	}

	t.Run("environment file values", func(t *testing.T) {
		var env, line strings.Builder
		env.WriteString("# comment\n")
		line.WriteString("/usr/local/bin/echoargs")
		for i, v := range values {
			a, err := model.EnvAssignment("V"+strconv.Itoa(i), v)
			if err != nil {
				t.Fatal(err)
			}
			env.WriteString(a)
			line.WriteString(" ${V" + strconv.Itoa(i) + "}")
		}
		put("/etc/default/echoargs", env.String(), 0o644)
		put("/etc/systemd/system/echoargs.service", "[Service]\nType=oneshot\nEnvironmentFile="+model.Must(model.UnitPath("/etc/default/echoargs"))+
			"\nExecStart="+line.String()+"\n", 0o644)
		c.MustExec(t, "systemctl", "daemon-reload")
		c.MustExec(t, "systemctl", "start", "echoargs.service")
		if diff := cmp.Diff(values, argv("echoargs")); diff != "" {
			t.Errorf("the environment file's values under systemd (-want +got):\n%s", diff)
		}
	})

	t.Run("command line arguments", func(t *testing.T) {
		line, err := model.ExecLineForTest(append([]string{"/usr/local/bin/echoargs"}, values...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(c.Root(), "run", "argv-echoargs")); err != nil {
			t.Fatal(err)
		}
		put("/etc/systemd/system/echoargs.service", "[Service]\nType=oneshot\nEnvironment=DAEMON_ARGS=--evil HOME=/evil\nExecStart="+line+"\n", 0o644)
		c.MustExec(t, "systemctl", "daemon-reload")
		c.MustExec(t, "systemctl", "start", "echoargs.service")
		if diff := cmp.Diff(values, argv("echoargs")); diff != "" {
			t.Errorf("ExecStart=%s under systemd (-want +got):\n%s", line, diff)
		}
	})
}
