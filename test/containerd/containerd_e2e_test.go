//go:build e2e

package containerd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestRuntimeRunsImages starts the built containerd with a node's configuration (its own root, state and socket),
// imports every archive of `make images` with ctr, and runs them with runc: each image's binary at the path kubeup's
// manifests run (--version of etcd, the Kubernetes components, CoreDNS and flanneld: static, with no base),
// kube-proxy's iptables (its base layer: Debian's iptables on the nf_tables backend) and kube-proxy's own --cleanup,
// which lists and rewrites the rules with them, the pause image (it holds until SIGTERM, then exits 0) and the e2e
// workload, which answers over the host network from a cgroup of its own, and whose `hello get` fetches from it in a
// container of its own. Everything is stopped and removed by the harness, by PID and path.
func TestRuntimeRunsImages(t *testing.T) {
	e2e.RequireRoot(t)
	bin := e2e.RuntimeBin(t)
	images := e2e.Images(t)
	v2, err := e2e.CgroupV2()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cgroup v2: %t; systemd is PID 1: %t", v2, e2e.SystemdBooted())

	c := e2e.StartContainerd(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The configuration containerd runs with is the one written: a key it did not know would be dropped.
	dump, err := e2e.Run(ctx, filepath.Join(bin, "containerd"), "--config", filepath.Join(c.Dir, "config.toml"), "config", "dump")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"restrict_oom_score_adj = true", "SystemdCgroup = " + strconv.FormatBool(c.SystemdCgroup), "sandbox = '" + e2e.PauseImage + "'"} {
		if !strings.Contains(dump, want) {
			t.Errorf("containerd config dump has no %q:\n%s", want, dump)
		}
	}
	// crictl reaches its CRI plugin, and the CRI plugin took the configuration.
	info, err := e2e.Run(ctx, filepath.Join(bin, "crictl"), "--runtime-endpoint", "unix://"+c.Socket, "info")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, `"restrictOOMScoreAdj": true`) {
		t.Errorf("crictl info: the CRI plugin does not restrict oom_score_adj:\n%s", info)
	}

	refs := map[string]bool{}
	for _, img := range images {
		if _, err := c.Ctr(ctx, "images", "import", img.Archive); err != nil {
			t.Fatalf("importing %s: %v", img.Archive, err)
		}
		refs[img.Ref] = true
	}
	out, err := c.Ctr(ctx, "images", "ls", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out)
	for ref := range refs {
		if !slices.Contains(got, ref) {
			t.Errorf("ctr images ls has no %s after the import; it has %v", ref, got)
		}
	}
	for _, want := range []string{e2e.PauseImage, e2e.HelloImage} {
		if !refs[want] {
			t.Errorf("the images cache has no %s", want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	t.Run("binaries", func(t *testing.T) {
		for i, img := range images {
			name := strings.TrimSuffix(filepath.Base(img.Archive), ".tar")
			if img.Ref == e2e.PauseImage || img.Ref == e2e.HelloImage {
				continue
			}
			want := "Kubernetes v" + e2e.KubernetesVersion
			tag := img.Ref[strings.LastIndex(img.Ref, ":")+1:]
			cmd := []string{"/usr/local/bin/" + name, "--version"}
			switch name {
			case "etcd":
				want = "etcd Version: " + strings.TrimSuffix(tag, "-0")
			case "coredns":
				// CoreDNS's image holds it at /coredns, as upstream's does.
				want, cmd = "CoreDNS-"+strings.TrimPrefix(tag, "v"), []string{"/coredns", "-version"}
			case "flannel":
				// flannel's holds it at /opt/bin/flanneld, as upstream's does; it prints its version on stderr.
				want, cmd = tag, []string{"/opt/bin/flanneld", "--version"}
			}
			out, err := ctrOutput(ctx, c, append([]string{"run", "--rm", "--net-host", img.Ref, fmt.Sprintf("version-%d", i)}, cmd...)...)
			if err != nil {
				t.Errorf("%s: %v", img.Ref, err)
				continue
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s: %s said %q, want %q in it", img.Ref, strings.Join(cmd, " "), out, want)
			}
		}
	})

	// kube-proxy runs iptables, iptables-save and iptables-restore (and the ip6 ones) by name: its image holds them,
	// on the nf_tables backend, with the libraries they link. Each container has a network namespace of its own
	// (no --net-host), so nothing here touches this machine's rules.
	t.Run("kube-proxy", func(t *testing.T) {
		ref := "registry.k8s.io/kube-proxy:v" + e2e.KubernetesVersion
		if !refs[ref] {
			t.Fatalf("the images cache has no %s", ref)
		}
		for i, tc := range []struct {
			argv []string
			want string
		}{
			{[]string{"iptables", "--version"}, "iptables v1.8.9 (nf_tables)"},
			{[]string{"ip6tables", "--version"}, "ip6tables v1.8.9 (nf_tables)"},
			{[]string{"iptables-restore", "--version"}, "iptables-restore v1.8.9 (nf_tables)"},
			{[]string{"nft", "--version"}, "nftables v1.0.6"},
			// The nat table of the container's own namespace: empty chains, read through the kernel's nf_tables.
			{[]string{"iptables", "-t", "nat", "-S"}, "-P POSTROUTING ACCEPT"},
		} {
			out, err := ctrOutput(ctx, c, append([]string{"run", "--rm", "--cap-add", "CAP_NET_ADMIN", ref, fmt.Sprintf("iptables-%d", i)}, tc.argv...)...)
			if err != nil || !strings.Contains(out, tc.want) {
				t.Errorf("%s in %s: %v\n%s\nwant %q in it", strings.Join(tc.argv, " "), ref, err, out, tc.want)
			}
		}
		// kube-proxy's --cleanup removes the rules of every mode it knows: it lists the nat and filter tables of
		// both families with iptables-save and rewrites them with iptables-restore (and asks nft of its nftables
		// table). It exits 0 only when each of them ran.
		out, err := ctrOutput(ctx, c, "run", "--rm", "--cap-add", "CAP_NET_ADMIN", ref, "kube-proxy-cleanup",
			"/usr/local/bin/kube-proxy", "--cleanup", "-v=4")
		if err != nil {
			t.Fatalf("kube-proxy --cleanup: %v\n%s", err, out)
		}
		for _, want := range []string{`command="iptables-save"`, `command="iptables-restore"`} {
			if !strings.Contains(out, want) {
				t.Errorf("kube-proxy --cleanup did not log running %s:\n%s", want, out)
			}
		}
		if strings.Contains(out, "executable file not found") {
			t.Errorf("kube-proxy --cleanup missed a program:\n%s", out)
		}
	})

	t.Run("pause", func(t *testing.T) {
		run := c.StartCtr(t, "pause", "run", "--rm", e2e.PauseImage, "pause")
		e2e.WaitFor(t, 2*time.Minute, "the pause container to run", func() (error, bool) {
			select {
			case <-run.Done():
				t.Fatalf("ctr run of pause exited: %v\n%s", run.Err(), e2e.Tail(run.Log, 20))
			default:
			}
			_, err := c.TaskPID(t, "pause")
			return err, err == nil
		})
		if _, err := c.Ctr(ctx, "tasks", "kill", "--signal", "SIGTERM", "pause"); err != nil {
			t.Fatal(err)
		}
		waitExit(t, run, "ctr run of pause")
	})

	t.Run("hello", func(t *testing.T) {
		port, err := e2e.FreeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		run := c.StartCtr(t, "hello", "run", "--rm", "--net-host", e2e.HelloImage, "hello", "/hello", "-listen", e2e.ListenAddr(port))
		url := "http://" + e2e.ListenAddr(port)
		e2e.WaitFor(t, 2*time.Minute, "the workload to answer on "+url+"/healthz", func() (string, bool) {
			select {
			case <-run.Done():
				t.Fatalf("ctr run of hello exited: %v\n%s", run.Err(), e2e.Tail(run.Log, 20))
			default:
			}
			body, err := get(url + "/healthz")
			if err != nil {
				return err.Error(), false
			}
			return body, body == "ok\n"
		})
		host, err := os.Hostname()
		if err != nil {
			t.Fatal(err)
		}
		if body, err := get(url + "/"); err != nil || body != "hello from "+host+"\n" {
			t.Errorf("GET /: %q, %v; want %q", body, err, "hello from "+host+"\n")
		}
		// `hello get` in a container of the workload's image (no shell, no curl) fetches from the server; a port
		// nothing listens on fails it. Each must exit by itself: a hello that took `get` for the server would not.
		getCtx, cancelGet := context.WithTimeout(ctx, 2*time.Minute)
		defer cancelGet()
		if out, err := c.Ctr(getCtx, "run", "--rm", "--net-host", e2e.HelloImage, "hello-get", "/hello", "get", url+"/healthz"); err != nil || out != "ok\n" {
			t.Errorf("hello get %s/healthz: %q, %v; want %q", url, out, err, "ok\n")
		}
		closed, err := e2e.FreeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		if out, err := ctrOutput(getCtx, c, "run", "--rm", "--net-host", e2e.HelloImage, "hello-get-refused", "/hello", "get", "http://"+e2e.ListenAddr(closed)+"/"); err == nil || !strings.Contains(out, "connection refused") {
			t.Errorf("hello get of a port nothing listens on: %v\n%s\nwant it to fail, refused", err, out)
		}
		pid, err := c.TaskPID(t, "hello")
		if err != nil {
			t.Fatal(err)
		}
		// It runs in the image's root filesystem, in the cgroup containerd gave it: /<namespace>/<id>.
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/hello", pid)); err != nil {
			t.Errorf("the workload's root filesystem has no /hello: %v", err)
		}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			t.Fatal(err)
		}
		if want := "/" + c.Namespace + "/hello"; !inCgroup(string(cg), v2, want) {
			t.Errorf("the workload is not in the cgroup %s (cgroup v2: %t):\n%s", want, v2, cg)
		}
		if _, err := c.Ctr(ctx, "tasks", "kill", "--signal", "SIGTERM", "hello"); err != nil {
			t.Fatal(err)
		}
		waitExit(t, run, "ctr run of hello")
		if out, err := c.Ctr(ctx, "containers", "ls", "--quiet"); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("containers left after ctr run --rm: %q, %v", out, err)
		}
	})
}

// inCgroup reports whether /proc/PID/cgroup puts the process in path: in the unified hierarchy (v2), or in
// the memory and pids controllers' hierarchies (v1).
func inCgroup(procCgroup string, v2 bool, path string) bool {
	want := map[string]bool{}
	if v2 {
		want[""] = false
	} else {
		want["memory"], want["pids"] = false, false
	}
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[2] != path {
			continue
		}
		for _, ctl := range strings.Split(f[1], ",") {
			if _, ok := want[ctl]; ok {
				want[ctl] = true
			}
		}
	}
	for _, ok := range want {
		if !ok {
			return false
		}
	}
	return true
}

// waitExit waits for a ctr run --rm to exit 0: its task exited 0 and the container was deleted.
func waitExit(t *testing.T, p *e2e.Process, what string) {
	t.Helper()
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, e2e.Tail(p.Log, 20))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not exit 2 minutes after SIGTERM\n%s", what, e2e.Tail(p.Log, 20))
	}
}

// ctrOutput runs ctr against c and returns what it wrote to stdout and stderr together (a container's logs go
// to stderr).
func ctrOutput(ctx context.Context, c *e2e.Containerd, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "ctr"), append([]string{"--address", c.Socket, "--namespace", c.Namespace}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// get is the body of a GET of url.
func get(url string) (string, error) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
