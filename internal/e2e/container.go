package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Container is the cached root filesystem booted with systemd in systemd-nspawn: a machine of its own with its
// own mount and PID namespaces (and the host's network).
type Container struct {
	// Name is the machine name (unique per boot).
	Name string
	// PID is the host's process id of the container's init, systemd.
	PID int
	// Dir is the booted root directory on the host: an overlay over the cache, or a copy of it. Its /run is not
	// the container's (nspawn mounts a tmpfs there inside): use Root to see what the container sees.
	Dir string
	// Console is the file that holds the container's console output.
	Console string

	cmd       *exec.Cmd
	waited    chan error
	overlay   bool
	tmp       string
	extraArgs []string // of systemd-nspawn, added by boot's before
	cgroups   []string // the machine's cgroups (BootMachine), removed once it is gone
	unreg     []func() // cross the container out of the leftover registry (see reap.go) once it is gone
	removed   bool     // cleanup has run
}

// Root is /proc/PID/root: the container's filesystem as its own processes see it, /run and its sockets
// included. A unix socket path through it reaches the container's systemd from the host.
func (c *Container) Root() string { return "/proc/" + strconv.Itoa(c.PID) + "/root" }

// Boot boots a fresh container from the cached root filesystem (which it never changes) and waits until its
// systemd is running. The container is stopped and its files removed in t.Cleanup. It has a network namespace
// of its own with loopback alone (--private-network): what runs in it as root on "/" (nodeup's masquerading
// rule, kubeup's routes) changes the container's network, never the host's.
func Boot(t testing.TB) *Container {
	t.Helper()
	return boot(t, "", []string{"--private-network"}, nil, nil, nil)
}

// boot is Boot with the directory that keeps the machine's disk across boots ("": a new one, removed with the
// machine; see MachineOptions.Disk), more arguments of systemd-nspawn, more environment, a function that
// prepares the root directory before nspawn starts, and one that returns the cgroup.procs files nspawn joins
// before it starts.
func boot(t testing.TB, disk string, args, env []string, before func(*Container) error, cgroupProcs func() []string) *Container {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "systemd-nspawn", "nsenter")
	rootfs := RootFS(t)
	tmp, err := os.MkdirTemp("", "kubeup-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	c := &Container{Name: "kubeup-e2e-" + hex.EncodeToString(suffix), Dir: filepath.Join(tmp, "root"),
		Console: filepath.Join(tmp, "console.log"), tmp: tmp, waited: make(chan error, 1)}
	c.unreg = append(c.unreg, register(t, record{Kind: kindDir, Path: tmp}), register(t, record{Kind: kindMount, Path: c.Dir}))
	t.Cleanup(func() { c.cleanup(t) })
	if err := c.prepare(rootfs, disk); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		if err := before(c); err != nil {
			t.Fatalf("preparing %s: %v", c.Name, err)
		}
	}
	var procs []string
	if cgroupProcs != nil {
		procs = cgroupProcs()
		for _, p := range procs {
			c.cgroups = append(c.cgroups, filepath.Dir(p))
		}
	}

	console, err := os.Create(c.Console)
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()
	nspawn := append([]string{"systemd-nspawn", "--register=no", "--keep-unit", "--quiet", "--boot",
		"--machine=" + c.Name, "--directory=" + c.Dir}, append(args, c.extraArgs...)...)
	nspawn = append(delegatedScope(c.Name), nspawn...)
	// nspawn joins the machine's cgroups before it starts: the machine's cgroup namespace is made from them.
	c.cmd = exec.Command("sh", append([]string{"-c", `for f in $KUBEUP_CGROUP_PROCS; do echo $$ >"$f"; done; exec "$@"`, "sh"}, nspawn...)...)
	c.cmd.Env = append(append(os.Environ(), env...), "KUBEUP_CGROUP_PROCS="+strings.Join(procs, " "))
	c.cmd.Stdout, c.cmd.Stderr = console, console
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own process group, killed as one
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting systemd-nspawn: %v", err)
	}
	go func() { c.waited <- c.cmd.Wait() }()
	if start, err := processStart(c.cmd.Process.Pid); err == nil {
		c.unreg = append(c.unreg, register(t, record{Kind: kindProcess, PID: c.cmd.Process.Pid, Start: start, Group: true}))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.waitRunning(ctx); err != nil {
		t.Fatalf("booting %s: %v\nconsole:\n%s", c.Name, err, tail(c.Console, 30))
	}
	// The container's init is in a session of its own: killing nspawn's process group does not end it.
	if start, err := processStart(c.PID); err == nil {
		c.unreg = append(c.unreg, register(t, record{Kind: kindProcess, PID: c.PID, Start: start}))
	}
	return c
}

// prepare makes the root directory: an overlay whose lower layer is the cache and whose upper layer is in disk
// (or in the container's own directory when disk is ""), or a copy when overlayfs is not available.
func (c *Container) prepare(rootfs, disk string) error {
	if disk == "" {
		disk = c.tmp
	}
	upper, work := filepath.Join(disk, "upper"), filepath.Join(disk, "work")
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		return err
	}
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", rootfs, upper, work)
	if err := syscall.Mount("overlay", c.Dir, "overlay", 0, opts); err == nil {
		c.overlay = true
		return nil
	} else if disk != c.tmp {
		return fmt.Errorf("a machine's disk kept across boots (%s) needs overlayfs: %w", disk, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := Run(ctx, "cp", "-a", rootfs+"/.", c.Dir)
	return err
}

// waitRunning finds the container's init and waits until `systemctl is-system-running` says running (or
// degraded: a unit failed, which is the business of the test).
func (c *Container) waitRunning(ctx context.Context) error {
	var state string
	for {
		select {
		case err := <-c.waited:
			c.waited <- err
			return fmt.Errorf("systemd-nspawn exited: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("systemd is %q after %v: %w", state, time.Minute, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if c.PID == 0 {
			c.PID = findInit(c.cmd.Process.Pid)
			continue
		}
		out, _ := c.Exec(ctx, "systemctl", "is-system-running")
		if state = strings.TrimSpace(out); state == "running" || state == "degraded" {
			return nil
		}
	}
}

// findInit returns the process id of the systemd that nspawn started, a descendant of pid; 0 when there is none
// yet.
func findInit(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		child, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == "systemd" {
			return child
		}
		if init := findInit(child); init != 0 {
			return init
		}
	}
	return 0
}

// Exec runs a command in the container (all its namespaces, through nsenter) and returns its combined output.
func (c *Container) Exec(ctx context.Context, args ...string) (string, error) {
	return Run(ctx, "nsenter", append([]string{"-t", strconv.Itoa(c.PID), "-a", "--"}, args...)...)
}

// MustExec is Exec that fails t on error.
func (c *Container) MustExec(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.Exec(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Show returns a property of a unit, as `systemctl show -p PROPERTY --value UNIT` prints it.
func (c *Container) Show(t testing.TB, unit, property string) string {
	t.Helper()
	return strings.TrimSpace(c.MustExec(t, "systemctl", "show", "-p", property, "--value", unit))
}

// Kill ends the machine at once, as a power cut would: SIGKILL to its init (its whole PID namespace goes with
// it) and to nspawn. Its mounts go with its mount namespace; its loop devices stay attached. The cleanup still
// removes its files.
func (c *Container) Kill(t testing.TB) {
	t.Helper()
	if c.PID != 0 {
		syscall.Kill(c.PID, syscall.SIGKILL)
	}
	if c.cmd != nil && c.cmd.Process != nil {
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		err := <-c.waited
		c.waited <- err
	}
}

// Remove kills the machine (Kill) and removes it now, as its cleanup would: its cgroups, the mount of its root
// and its files; a Disk it was given stays. A machine that died and boots again with the same Disk must be
// removed first: two overlays cannot share an upper directory.
func (c *Container) Remove(t testing.TB) {
	t.Helper()
	c.Kill(t)
	c.cleanup(t)
}

// cleanup stops the container (SIGTERM to nspawn powers it off; SIGKILL to its process group and to its init
// if that takes too long), then removes its root directory. It runs once.
func (c *Container) cleanup(t testing.TB) {
	if c.removed {
		return
	}
	c.removed = true
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.waited:
		case <-time.After(20 * time.Second):
			t.Logf("%s did not power off in 20s: killing it", c.Name)
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			if c.PID != 0 {
				syscall.Kill(c.PID, syscall.SIGKILL) // init: the whole PID namespace goes with it
			}
			<-c.waited
		}
	}
	for _, cg := range c.cgroups {
		if err := removeCgroupTree(cg); err != nil {
			t.Error(err)
		}
	}
	if c.overlay {
		if err := syscall.Unmount(c.Dir, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("unmounting the overlay at %s: %v: leaving %s in place", c.Dir, err, c.tmp)
			return
		}
	}
	if err := os.RemoveAll(c.tmp); err != nil {
		t.Errorf("removing %s: %v", c.tmp, err)
		return
	}
	for _, unreg := range c.unreg {
		unreg()
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// delegatedScope returns the command that runs a machine named name in a cgroup of its own that systemd
// delegates, on a host where systemd is PID 1 and /sys/fs/cgroup is the unified hierarchy: nspawn --keep-unit
// stays in the unit it was started in, which must be delegated (systemd-nspawn(1)), and the machine's systemd,
// containerd and kubelet need the controllers enabled below it. systemd-run --scope makes that unit and execs
// nspawn in it, so nspawn keeps this process's child's PID. Elsewhere it returns nothing: on cgroup v1 the
// machine joins cgroups made for it (makeMachineCgroups); with no systemd there is no one to delegate.
func delegatedScope(name string) []string {
	if v2, err := CgroupV2(); err != nil || !v2 || !SystemdBooted() {
		return nil
	}
	return []string{"systemd-run", "--scope", "--quiet", "--collect", "--property=Delegate=yes", "--unit=" + name}
}
