package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The container runtime and the images a node runs: `make runtime-binaries` (part of `make e2e-deps`) builds
// containerd, containerd-shim-runc-v2, ctr, runc, crictl and the CNI plugins from the Go modules pinned in
// hack/runtime-binaries into a cache keyed by that module; `make images` writes the OCI image archives of
// etcd, the Kubernetes components, the pause image and the e2e workload into a cache keyed by what makes them
// (docs/images.md). The Makefile exports both caches' directories.

// RuntimeBinEnv names the environment variable that holds the directory of the built runtime (the Makefile
// exports it): containerd, containerd-shim-runc-v2, ctr, runc and crictl, and the CNI plugins in cni/.
const RuntimeBinEnv = "KUBEUP_RUNTIME_BIN"

// ImagesEnv names the environment variable that holds the directory of the image archives (the Makefile
// exports it), listed in its file IMAGES.
const ImagesEnv = "KUBEUP_IMAGES"

// RuntimeBinaries and CNIPlugins are what `make runtime-binaries` builds.
var (
	RuntimeBinaries = []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "crictl"}
	CNIPlugins      = []string{"bridge", "host-local", "loopback", "portmap"}
)

// The images `make images` writes besides those named by the cluster spec's defaults.
const (
	// PauseImage is the sandbox image: containerd's default, holding our own /pause (hack/images/pause).
	PauseImage = "registry.k8s.io/pause:3.10.2"
	// HelloImage is the e2e workload (hack/images/hello): /hello answers /healthz with "ok" and any other path
	// with "hello from HOSTNAME"; it listens on -listen, :$PORT or :8080.
	HelloImage = "kubeup.dev/e2e/hello:v1"
)

// The caches when the environment does not name them: each holds one directory per key; the one complete
// directory there is taken.
const (
	runtimeCache = "/var/cache/kubeup/runtime"
	imagesCache  = "/var/cache/kubeup/images"
)

// RuntimeBin returns the directory of the built runtime ($KUBEUP_RUNTIME_BIN, or the one complete build in
// /var/cache/kubeup/runtime); it skips t, loudly (under CI=true: fails it), when a binary is missing.
func RuntimeBin(t testing.TB) string {
	t.Helper()
	dir := cacheDir(t, RuntimeBinEnv, runtimeCache, "VERSIONS", "make runtime-binaries")
	files := append([]string(nil), RuntimeBinaries...)
	for _, p := range CNIPlugins {
		files = append(files, filepath.Join("cni", p))
	}
	for _, f := range files {
		if err := executable(filepath.Join(dir, f)); err != nil {
			CannotRun(t, "(e2e) the container runtime is incomplete: %v; `make runtime-binaries` builds it", err)
		}
	}
	return dir
}

// Image is one archive of `make images`.
type Image struct {
	// Archive is the OCI image archive's path.
	Archive string
	// Ref is the image's name, as kubeup's manifests name it.
	Ref string
}

// Images returns the archives of `make images` ($KUBEUP_IMAGES, or the one complete set in
// /var/cache/kubeup/images), as its IMAGES lists them; it skips t, loudly (under CI=true: fails it), when
// there are none or one is missing.
func Images(t testing.TB) []Image {
	t.Helper()
	dir := cacheDir(t, ImagesEnv, imagesCache, "IMAGES", "make images")
	f, err := os.Open(filepath.Join(dir, "IMAGES"))
	if err != nil {
		CannotRun(t, "(e2e) no image archives: %v; `make images` writes them", err)
	}
	defer f.Close()
	var images []Image
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		archive, ref, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			t.Fatalf("%s: line %q: want ARCHIVE REFERENCE", f.Name(), sc.Text())
		}
		img := Image{Archive: filepath.Join(dir, archive), Ref: ref}
		if _, err := os.Stat(img.Archive); err != nil {
			CannotRun(t, "(e2e) image %s: %v; `make images` writes it", ref, err)
		}
		images = append(images, img)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return images
}

// cacheDir is the directory $env names or, when it is unset, the one directory under parent that holds marker
// (a complete build: the Makefile writes it last).
func cacheDir(t testing.TB, env, parent, marker, target string) string {
	t.Helper()
	if dir := os.Getenv(env); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			CannotRun(t, "(e2e) %s=%s is not built: %v; `%s` builds it (`make e2e-deps` too)", env, dir, err, target)
		}
		return dir
	}
	found, _ := filepath.Glob(filepath.Join(parent, "*", marker))
	if len(found) != 1 {
		CannotRun(t, "(e2e) %s is not set and %s holds %d builds (%v): run the tests through make, which sets it, or `%s`",
			env, parent, len(found), found, target)
	}
	return filepath.Dir(found[0])
}

// CgroupV2 reports whether this machine's /sys/fs/cgroup is the unified hierarchy (cgroup v2) rather than v1's
// hierarchies, one per controller.
func CgroupV2() (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return false, fmt.Errorf("statfs /sys/fs/cgroup: %w", err)
	}
	const cgroup2Magic = 0x63677270
	return st.Type == cgroup2Magic, nil
}

// SystemdBooted reports whether PID 1 is systemd (as sd_booted(3) tells): then kubelet and containerd use the
// systemd cgroup driver, else cgroupfs.
func SystemdBooted() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// Containerd is a containerd that a test started on the host, with a configuration, root, state and sockets of
// its own in a temporary directory. It is stopped, with every container it ran, in t.Cleanup.
type Containerd struct {
	// Dir holds config.toml, root/, state/, the sockets and containerd.log.
	Dir string
	// Socket is its gRPC socket, for ctr -a and crictl --runtime-endpoint.
	Socket string
	// Namespace is the containerd namespace Ctr works in: unique to the test process, so that the cgroups of
	// its containers (/<namespace>/<id>) are its own.
	Namespace string
	// Bin is the runtime's directory (RuntimeBin).
	Bin string
	// SystemdCgroup is the cgroup driver the configuration gives CRI's runc: systemd where PID 1 is systemd.
	SystemdCgroup bool

	proc *Process
}

// StartContainerd starts the containerd of bin (RuntimeBin) and waits until it answers. Its configuration is
// the one a kubeup node needs on a machine like this one: restrict_oom_score_adj (a VM without
// CAP_SYS_RESOURCE cannot lower a sandbox's oom_score_adj), the cgroup driver that matches PID 1, the sandbox
// image PauseImage, runc and the CNI plugins of bin.
func StartContainerd(t testing.TB, bin string) *Containerd {
	t.Helper()
	RequireRoot(t)
	dir, err := os.MkdirTemp("", "kubeup-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	unregDir := register(t, record{Kind: kindDir, Path: dir})
	c := &Containerd{
		Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), Bin: bin, SystemdCgroup: SystemdBooted(),
		Namespace: fmt.Sprintf("kubeup-e2e-%d", os.Getpid()),
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("stopping containerd: %v", err)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
			return
		}
		unregDir()
	})
	config := filepath.Join(dir, "config.toml")
	WriteFile(t, config, c.config())
	cmd := exec.Command(filepath.Join(bin, "containerd"), "--config", config)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	p, err := startProcess(cmd, filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.proc = p
	waitContainerd(t, p, c.Socket, func(ctx context.Context) (string, error) { return c.Ctr(ctx, "version") })
	return c
}

// waitContainerd waits until ask, a client's call to the containerd p at socket, succeeds; it fails t when
// containerd exits first.
func waitContainerd(t testing.TB, p *Process, socket string, ask func(context.Context) (string, error)) {
	t.Helper()
	WaitFor(t, 2*time.Minute, "containerd to answer on "+socket, func() (string, bool) {
		select {
		case <-p.Done():
			t.Fatalf("containerd exited: %v\n%s", p.Err(), Tail(p.Log, 30))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := ask(ctx)
		return out, err == nil
	})
}

// config is containerd's configuration, in the version containerd 2.4 writes (`containerd config default`):
// every path it would take on the host (sockets, /opt/containerd, NRI's socket, the CNI directories) is under
// Dir or the runtime's directory instead, and it imports no other file (containerd reads the imports a file
// names, not its default /etc/containerd/conf.d, which `config dump` shows all the same).
func (c *Containerd) config() string {
	q := strconv.Quote
	return fmt.Sprintf(`version = 4
root = %s
state = %s
imports = []

[plugins.'io.containerd.server.v1.grpc']
  address = %s

[plugins.'io.containerd.server.v1.ttrpc']
  address = %s

[plugins.'io.containerd.server.v1.debug']
  address = %s

[plugins.'io.containerd.internal.v1.opt']
  path = %s

[plugins.'io.containerd.image-verifier.v1.bindir']
  bin_dir = %s

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = %s

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = %s
  SystemdCgroup = %t

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = [%s]
  conf_dir = %s
`, q(filepath.Join(c.Dir, "root")), q(filepath.Join(c.Dir, "state")), q(c.Socket), q(c.Socket+".ttrpc"),
		q(filepath.Join(c.Dir, "debug.sock")), q(filepath.Join(c.Dir, "opt")), q(filepath.Join(c.Dir, "image-verifier")),
		q(PauseImage), q(filepath.Join(c.Bin, "runc")), c.SystemdCgroup, q(filepath.Join(c.Bin, "cni")),
		q(filepath.Join(c.Dir, "net.d")))
}

// Ctr runs the runtime's ctr against this containerd, in its Namespace, and returns its standard output (ctr
// warns on its standard error: on cgroup v1, that v1 is deprecated); an error holds the standard error.
func (c *Containerd) Ctr(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"--address", c.Socket, "--namespace", c.Namespace}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "ctr"), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// StartCtr starts a long-running ctr command (ctr run) against this containerd, its output in a log file under
// Dir, registered for the next run's reap and stopped in t.Cleanup.
func (c *Containerd) StartCtr(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.Bin, "ctr"), append([]string{"--address", c.Socket, "--namespace", c.Namespace}, args...)...)
	return StartProcess(t, cmd, filepath.Join(c.Dir, name+".log"))
}

// TaskPID returns the host PID of container id's task, registering it (and its shim) for the next run's reap:
// a shim runs in a process group of its own, which stopping containerd does not end.
func (c *Containerd) TaskPID(t testing.TB, id string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Ctr(ctx, "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == id && f[2] == "RUNNING" {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				return 0, fmt.Errorf("ctr tasks ls: %q: %w", line, err)
			}
			c.registerOwned(pid)
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no running task %s in ctr tasks ls:\n%s", id, out)
}

// registerOwned registers pid and the shims of this containerd for the next run's reap (not crossed out: a
// reap of a process that has gone does nothing), with the mounts under Dir.
func (c *Containerd) registerOwned(pid int) {
	pids := append(c.shims(), pid)
	for _, p := range pids {
		if start, err := processStart(p); err == nil {
			registerErr(record{Kind: kindProcess, PID: p, Start: start, Group: true})
		}
	}
	for _, m := range MountsUnder(c.Dir) {
		registerErr(record{Kind: kindMount, Path: m})
	}
}

// shims returns the PIDs of the live shims this containerd started: those of its state directory whose command
// line names its socket (a PID alone may have been reused).
func (c *Containerd) shims() []int {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "state", "io.containerd.runtime.v2.task", "*", "*", "shim.pid"))
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), c.Socket) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stop kills every task of its namespace, stops containerd, kills the shims that are left, unmounts what is
// mounted under Dir and removes the cgroups of the namespace's containers. It leaves Dir for the caller.
func (c *Containerd) stop() error {
	var errs []error
	if c.proc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if out, err := c.Ctr(ctx, "tasks", "ls"); err == nil {
			for _, line := range strings.Split(out, "\n")[1:] {
				if f := strings.Fields(line); len(f) == 3 {
					if pid, err := strconv.Atoi(f[1]); err == nil && pid > 0 {
						syscall.Kill(pid, syscall.SIGKILL)
					}
					c.Ctr(ctx, "tasks", "delete", "--force", f[0])
				}
			}
		}
		if out, err := c.Ctr(ctx, "containers", "ls", "--quiet"); err == nil {
			for _, id := range strings.Fields(out) {
				c.Ctr(ctx, "containers", "delete", id)
			}
		}
		cancel()
		shims := c.shims()
		c.proc.Stop(10 * time.Second)
		for _, pid := range shims {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range shims {
			for deadline := time.Now().Add(20 * time.Second); processExists(pid); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					errs = append(errs, fmt.Errorf("shim %d still running 20s after SIGKILL", pid))
					break
				}
			}
		}
	}
	for _, m := range MountsUnder(c.Dir) {
		if err := syscall.Unmount(m, 0); err != nil {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
	}
	errs = append(errs, c.removeCgroups())
	return errors.Join(errs...)
}

// processExists reports whether pid is a process that has not been reaped (a zombie counts as gone).
func processExists(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// removeCgroups removes the cgroup /<Namespace> that runc made for the namespace's containers (ctr's default
// cgroup path is /<namespace>/<id>), in every hierarchy; runc removes the containers' own.
func (c *Containerd) removeCgroups() error {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", c.Namespace))
	dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c.Namespace))
	var errs []error
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// FreeLoopbackPort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreeLoopbackPort() (int, error) {
	_, port, err := freeLoopbackPort()
	return port, err
}

// ListenAddr is "127.0.0.1:port".
func ListenAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// InstallRuntime puts the runtime of bin (RuntimeBin) into the node root root where nodeup's assets install it:
// containerd, containerd-shim-runc-v2, ctr and crictl in /usr/local/bin, runc in /usr/local/sbin, the CNI
// plugins in /opt/cni/bin (hard links where the filesystems allow, else copies).
func InstallRuntime(t testing.TB, bin, root string) {
	t.Helper()
	for _, b := range RuntimeBinaries {
		dir := "/usr/local/bin"
		if b == "runc" {
			dir = "/usr/local/sbin"
		}
		InstallFile(t, filepath.Join(bin, b), filepath.Join(root, dir, b))
	}
	for _, p := range CNIPlugins {
		InstallFile(t, filepath.Join(bin, "cni", p), filepath.Join(root, "/opt/cni/bin", p))
	}
}

// InstallFile puts the file src at dst, executable: a hard link when both are on one file system, else a copy.
// It is made beside dst and renamed over it: a dst that runs (a machine booted again on its disk, whose units
// started its binaries at boot) is replaced, not written into ("text file busy").
func InstallFile(t testing.TB, src, dst string) {
	t.Helper()
	if err := installFile(src, dst); err != nil {
		t.Fatal(err)
	}
}

func installFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if a, err := os.Stat(src); err != nil {
		return err
	} else if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
		return nil // linked already: a rename of one link over another of the same file does nothing
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".e2e-install")
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// NodeContainerdSocket is containerd's socket on a node, by default.
const NodeContainerdSocket = "/run/containerd/containerd.sock"

// StartNodeContainerd starts the containerd of the node root root as its unit would, /usr/local/bin/containerd
// with no flag (InstallRuntime puts it there), so that it reads the configuration nodeup wrote in
// /etc/containerd/config.toml: chrooted in root, in a mount namespace of its own (private: nothing it mounts
// reaches the host) with /proc, /sys and /dev. Every directory it uses (/var/lib/containerd, /run/containerd,
// /opt/containerd, /etc/cni/net.d) is root's, none of the host's. It waits until containerd answers on
// root/run/containerd/containerd.sock; containerd is stopped in t.Cleanup.
func StartNodeContainerd(t testing.TB, bin, root string) *Process {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "unshare", "chroot")
	const script = `set -e
r="$1"
mkdir -p "$r/proc" "$r/sys" "$r/dev" "$r/tmp"
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys"
mount --rbind /dev "$r/dev"
exec chroot "$r" /usr/local/bin/containerd`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", root)
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	p := StartProcess(t, cmd, filepath.Join(root, "containerd.log"))
	endpoint := "unix://" + filepath.Join(root, NodeContainerdSocket)
	waitContainerd(t, p, endpoint, func(ctx context.Context) (string, error) {
		return Run(ctx, filepath.Join(bin, "crictl"), "--runtime-endpoint", endpoint, "version")
	})
	return p
}
