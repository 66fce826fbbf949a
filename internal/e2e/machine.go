package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// MachineOptions make a booted container (BootMachine) into a node of a cluster: a machine of its own that runs
// containerd and kubelet, in a network namespace of its own.
type MachineOptions struct {
	// NetNS is the network namespace the machine joins (/run/netns/NAME, as NetNode makes); "" keeps the
	// host's network.
	NetNS string
	// Binds are directories of the host the machine sees at the same path (nspawn --bind): a state store, a
	// volume pool. ReadOnly are bound read-only.
	Binds, ReadOnly []string
	// Kubelet prepares the machine for containerd and kubelet (see BootMachine).
	Kubelet bool
	// Hostname is the machine's host name (default: its machine name): kubelet's node name, protokube's node id.
	Hostname string
	// Nameserver, when set, is the machine's only resolver (/etc/resolv.conf).
	Nameserver string
	// LoopDevices makes the nodes of loop devices 0-63 and /dev/loop-control in the machine, as a VM's udev
	// would: protokube attaches the volumes of the local provider's pool there (losetup takes the first free
	// device, whose node must exist).
	LoopDevices bool
	// Disk, when set, is a directory that keeps the machine's disk (the upper layer of its root and containerd's
	// data) across boots: a machine that dies and boots again with the same Disk finds its files. "" gives the
	// machine a new disk, removed with it.
	Disk string
}

// kubeletSysctls are the kernel settings kubelet insists on (it writes them when they differ, and a machine's
// /proc/sys is read-only): BootMachine sets them on the host for as long as a machine with Kubelet runs, and
// puts the former values back after the last one (holdSysctls).
var kubeletSysctls = [][2]string{
	{"vm/overcommit_memory", "1"},
	{"kernel/panic", "10"},
	{"kernel/panic_on_oops", "1"},
}

// BootMachine boots a container as Boot does, with opts. With Kubelet, what a virtual machine would give
// kubelet and containerd, and nspawn does not by default:
//   - every capability (runc needs CAP_NET_ADMIN and others nspawn drops), and no seccomp filter of nspawn's
//     (runc installs the pods' own);
//   - /proc/sys/net writable (SYSTEMD_NSPAWN_API_VFS_WRITABLE=network): the machine's network namespace is its
//     own, and the pods' bridge (the CNI bridge plugin) turns IP forwarding on in it;
//   - on cgroup v1, a cgroup of its own in every hierarchy, mounted writable in the machine (nspawn mounts
//     the hierarchies read-only; the machine's cgroup namespace makes its cgroup the root it sees), so that
//     each machine's kubelet keeps its pods under a root of its own;
//   - /dev/kmsg (kubelet's OOM watcher), /etc/hosts (containerd copies it into each pod);
//   - /var/lib/containerd on the host's file system: overlayfs, containerd's snapshotter, cannot take an
//     upper directory on the machine's own overlay root;
//   - kubelet's kernel settings on the host (kubeletSysctls).
func BootMachine(t testing.TB, opts MachineOptions) *Container {
	t.Helper()
	RequireRoot(t)
	args := []string{}
	var env []string
	if opts.NetNS != "" {
		args = append(args, "--network-namespace-path="+opts.NetNS)
	}
	for _, b := range opts.Binds {
		args = append(args, "--bind="+b)
	}
	for _, b := range opts.ReadOnly {
		args = append(args, "--bind-ro="+b)
	}
	var cgroups []string
	var prepare []func(c *Container) error
	if opts.Hostname != "" {
		prepare = append(prepare, func(c *Container) error {
			return os.WriteFile(filepath.Join(c.Dir, "etc/hostname"), []byte(opts.Hostname+"\n"), 0o644)
		})
	}
	if opts.Nameserver != "" {
		args = append(args, "--resolv-conf=off")
		prepare = append(prepare, func(c *Container) error {
			return os.WriteFile(filepath.Join(c.Dir, "etc/resolv.conf"), []byte("nameserver "+opts.Nameserver+"\noptions timeout:1 attempts:2\n"), 0o644)
		})
	}
	if opts.Kubelet {
		holdSysctls(t)
		args = append(args, "--capability=all", "--bind=/dev/kmsg")
		env = append(env, "SYSTEMD_SECCOMP=0", "SYSTEMD_NSPAWN_API_VFS_WRITABLE=network")
		v2, err := CgroupV2()
		if err != nil {
			t.Fatal(err)
		}
		prepare = append(prepare, func(c *Container) error {
			data := filepath.Join(c.tmp, "containerd")
			if opts.Disk != "" {
				data = filepath.Join(opts.Disk, "containerd")
			}
			if err := os.MkdirAll(data, 0o711); err != nil {
				return err
			}
			c.extraArgs = append(c.extraArgs, "--bind="+data+":/var/lib/containerd")
			hostname := opts.Hostname
			if hostname == "" {
				hostname = c.Name
			}
			hosts := "127.0.0.1\tlocalhost\n127.0.1.1\t" + hostname + "\n::1\tlocalhost\n"
			if err := os.WriteFile(filepath.Join(c.Dir, "etc/hosts"), []byte(hosts), 0o644); err != nil {
				return err
			}
			if v2 {
				return nil // nspawn delegates a cgroup v2 subtree to the machine itself
			}
			if err := installUnit(c.Dir, cgroupsUnit, "[Unit]\nDescription=the cgroup v1 hierarchies, writable (kubeup e2e)\n"+
				"Before=containerd.service kubelet.service\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"+
				"StandardOutput=append:"+cgroupsLog+"\nStandardError=append:"+cgroupsLog+"\n"+
				"ExecStart=/bin/sh -c "+systemdQuote(writableCgroups)+"\n"); err != nil {
				return err
			}
			cgroups, err = makeMachineCgroups(t, c)
			return err
		})
	}
	before := func(c *Container) error {
		for _, f := range prepare {
			if err := f(c); err != nil {
				return err
			}
		}
		return nil
	}
	c := boot(t, opts.Disk, args, env, before, func() []string { return cgroups })
	if opts.Kubelet {
		if v2, _ := CgroupV2(); !v2 {
			if state := c.Show(t, cgroupsUnit, "ActiveState"); state != "active" {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				out, _ := c.Exec(ctx, "sh", "-c", "journalctl --no-pager -u "+cgroupsUnit+"; cat "+cgroupsLog)
				t.Fatalf("making the cgroup hierarchies of %s writable: %s is %s\n%s", c.Name, cgroupsUnit, state, out)
			}
		}
	}
	if opts.LoopDevices {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := c.Exec(ctx, "sh", "-c", loopDevices); err != nil {
			t.Fatalf("making the loop devices' nodes in %s: %v\n%s", c.Name, err, out)
		}
	}
	return c
}

// loopDevices makes the nodes of /dev/loop-control and loop devices 0-63 in a machine.
const loopDevices = `[ -e /dev/loop-control ] || mknod /dev/loop-control c 10 237
i=0
while [ $i -lt 64 ]; do
	[ -e /dev/loop$i ] || mknod /dev/loop$i b 7 $i
	i=$((i + 1))
done`

// writableCgroups mounts each cgroup v1 hierarchy of the machine again, writable (nspawn mounts them read-only;
// a remount of those mounts can be refused as busy, a new mount cannot). name=systemd is the machine's systemd's
// and writable already.
//
// The machine runs it at every boot (cgroupsUnit), before containerd and kubelet: on a machine booted again on its
// disk, both are enabled and start at boot, and kubelet on read-only hierarchies cannot make its pods' cgroups.
// The unmount is lazy: on such a boot something in the machine already holds a hierarchy ("target is busy"); it
// keeps the read-only mount it has, and every path looked up from then on reaches the writable one.
const writableCgroups = `set -e
mount -o remount,rw /sys/fs/cgroup
awk '$(NF-2) == "cgroup" { print $5, $NF }' /proc/self/mountinfo | while read -r dir opts; do
	case ",$opts," in *,name=systemd,*) continue ;; esac
	o=$(printf '%s\n' "$opts" | tr , '\n' | grep -vx 'rw\|ro' | paste -sd,)
	umount -l "$dir"
	mount -t cgroup -o "$o" cgroup "$dir"
done
`

// makeMachineCgroups makes the cgroup name below this process's own in every cgroup v1 hierarchy but
// name=systemd (the machine's systemd makes its own there), cpuset's cpus and mems copied from its parent, and
// returns the files nspawn writes its process id to before it starts. The cgroups are registered: a cleanup
// removes them, depth first, once the machine is gone, and crosses them out of the registry.
func makeMachineCgroups(t testing.TB, c *Container) ([]string, error) {
	name := c.Name
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var procs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || parts[1] == "" || strings.HasPrefix(parts[1], "name=") {
			continue
		}
		hier := filepath.Join("/sys/fs/cgroup", parts[1])
		if _, err := os.Stat(hier); err != nil {
			continue // co-mounted under another name: cpu,cpuacct is reached through cpu and cpuacct
		}
		dir := filepath.Join(hier, parts[2], name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		c.unreg = append(c.unreg, register(t, record{Kind: kindCgroup, Path: dir}))
		if strings.Contains(","+parts[1]+",", ",cpuset,") {
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
				if err != nil {
					return nil, err
				}
				if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
					return nil, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
				}
			}
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs, sc.Err()
}

// removeCgroupTree removes the cgroup dir and every cgroup below it, deepest first. A cgroup that still holds a
// process cannot be removed: that is an error.
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := os.Remove(d)
			// A cgroup whose last process has just exited is busy for a moment.
			if err == nil || errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}

// demoSysctls is where `make demo` links its record of the host's values of the same settings while its machines
// hold them (hack/demo-env.sh): two holders would each take the other's values for the host's and put the
// wrong ones back.
var demoSysctls = "/run/kubeup-demo.sysctls"

// demoHolds returns an error when make demo holds kubelet's kernel settings: its link names a record that is
// there (a demo removed without make demo-clean leaves a dangling link, which holds nothing).
func demoHolds() error {
	if _, err := os.Stat(demoSysctls); err == nil {
		return fmt.Errorf("make demo holds them (%s): run the tests after make demo-clean", demoSysctls)
	}
	return nil
}

// sysctlFile holds the host's values of kubeletSysctls from before the first machine with kubelet set them,
// for as long as any test process holds them (a kindSysctl record in its registry).
func sysctlFile() string { return registryDir() + ".sysctl.json" }

// holdSysctls sets kubeletSysctls on the host, writing the former values down first when no other test process
// holds them, and registers this process as a holder. The last holder to end puts the former values back
// (releaseSysctls, in t.Cleanup; Reap for a process that died).
func holdSysctls(t testing.TB) {
	t.Helper()
	err := withSysctlLock(func() error {
		if _, err := os.Stat(sysctlFile()); errors.Is(err, fs.ErrNotExist) {
			if err := demoHolds(); err != nil {
				return err
			}
			former := map[string]string{}
			for _, kv := range kubeletSysctls {
				b, err := os.ReadFile("/proc/sys/" + kv[0])
				if err != nil {
					return err
				}
				former[kv[0]] = strings.TrimSpace(string(b))
			}
			b, _ := json.Marshal(former)
			if err := os.WriteFile(sysctlFile()+".tmp", b, 0o600); err != nil {
				return err
			}
			if err := os.Rename(sysctlFile()+".tmp", sysctlFile()); err != nil {
				return err
			}
		}
		for _, kv := range kubeletSysctls {
			if err := os.WriteFile("/proc/sys/"+kv[0], []byte(kv[1]), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("setting kubelet's kernel settings on the host: %v", err)
	}
	done := register(t, record{Kind: kindSysctl})
	t.Cleanup(func() {
		done()
		if _, err := releaseSysctls(); err != nil {
			t.Errorf("putting the host's kernel settings back: %v", err)
		}
	})
}

// releaseSysctls puts the values sysctlFile holds back, unless a live test process still holds them (a
// kindSysctl record, crossed out by a holder before it calls this).
func releaseSysctls() (msg string, err error) {
	err = withSysctlLock(func() error {
		b, err := os.ReadFile(sysctlFile())
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if liveSysctlHolder() {
			return nil
		}
		var former map[string]string
		if err := json.Unmarshal(b, &former); err != nil {
			return fmt.Errorf("%s: %w", sysctlFile(), err)
		}
		var done []string
		for k, v := range former {
			if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
				return err
			}
			done = append(done, k+"="+v)
		}
		slices.Sort(done)
		msg = "put the host's kernel settings back: " + strings.Join(done, " ")
		return os.Remove(sysctlFile())
	})
	return msg, err
}

// liveSysctlHolder reports whether a live test process's registry holds a kindSysctl record.
func liveSysctlHolder() bool {
	entries, _ := os.ReadDir(registryDir())
	for _, e := range entries {
		if pid, start, ok := registryOwner(e); !ok || !alive(pid, start) {
			continue
		}
		if held, _ := filepath.Glob(filepath.Join(registryDir(), e.Name(), "*-"+kindSysctl+".json")); len(held) > 0 {
			return true
		}
	}
	return false
}

// withSysctlLock runs f holding an exclusive lock shared by every test process of this machine.
func withSysctlLock(f func() error) error {
	if err := os.MkdirAll(filepath.Dir(sysctlFile()), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(sysctlFile()+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	return f()
}

// cgroupsUnit is the unit of a machine on a cgroup v1 host that runs writableCgroups at boot.
const cgroupsUnit = "kubeup-e2e-cgroups.service"

// cgroupsLog is where cgroupsUnit writes what its commands print (a short-lived process's lines can reach the
// journal without its unit's name, and journalctl -u would not show them).
const cgroupsLog = "/var/log/kubeup-e2e-cgroups.log"

// installUnit writes the unit file name into the machine root dir and enables it (multi-user.target wants it).
func installUnit(dir, name, unit string) error {
	units := filepath.Join(dir, "etc/systemd/system")
	if err := os.MkdirAll(filepath.Join(units, "multi-user.target.wants"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(units, name), []byte(unit), 0o644); err != nil {
		return err
	}
	link := filepath.Join(units, "multi-user.target.wants", name)
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink("/etc/systemd/system/"+name, link)
}

// systemdQuote quotes s as one argument of a unit's command line: in double quotes, with backslashes, double
// quotes and dollar signs escaped (systemd expands $ and %: "%%" and "$$" are the literal ones).
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$", "%", "%%", "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
