// Package staticpods is a stand-in for kubelet's pod half, not product code, left to protokube's end-to-end
// tests (internal/e2e's FakeKubelet): Runner runs the static pods of one node, each as a process on the host. The
// demo and the control plane's end-to-end tests (test/e2e) run the real kubelet on containerd in machines of their
// own (internal/e2e.BootMachine); protokube's data-safety tests move there next, and this package goes with them.
package staticpods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// Config is what a Runner runs: the pods of one node.
type Config struct {
	// NetNS is the node's network namespace, as `ip netns` knows it: the pods run through `ip netns exec NetNS`.
	NetNS string
	// Root is the node's filesystem: a directory of the host ("/" for the host itself).
	Root string
	// ManifestDir is the node's manifest directory under Root ("/etc/kubernetes/manifests").
	ManifestDir string
	// LogDir holds each manifest's log (<name>.log) and its pod's root filesystem mount point (<name>.rootfs).
	LogDir string
	// Only, when set, selects the manifests (by file name, "etcd-main.manifest") the Runner runs; the others
	// are ignored.
	Only func(manifest string) bool
	// Name is what the header line of each start in a pod's log calls the Runner ("static pods" when "").
	Name string
	// Start starts a pod's command with its output appended to logFile; nil: StartProcess.
	Start func(cmd *exec.Cmd, logFile string) (Process, error)
	// Binaries maps a container command, as the manifest names it ("/usr/local/bin/kube-apiserver", an
	// absolute path), to the host file that runs for it ("/var/cache/kubeup/bin/v1.34.2/kube-apiserver"): a pod
	// whose command is a key gets that file bind-mounted, read-only, at the command's path in its own root
	// filesystem, so that its process runs as the manifest names it, as from the image (see podScript). A
	// command that is not a key must be installed on the host at its path, as Debian's etcd is.
	Binaries map[string]string
}

// Process is a pod's running command, as Config.Start returns it.
type Process interface {
	// PID is the process id.
	PID() int
	// Done is closed once the process has exited and was waited for.
	Done() <-chan struct{}
	// Err is how the process exited; nil while it runs.
	Err() error
	// Stop sends SIGTERM, waits up to grace, then SIGKILL, and waits.
	Stop(grace time.Duration) error
}

// Runner runs the static pods of one node. Every 200ms it reads the node's manifest directory; for each
// *.manifest (a YAML Pod, as nodetasks.ManifestFile writes it) that Config.Only selects, it runs the first
// container's command and args, with the container's env, as a process on the host (the image is ignored: the
// binary is the host file Config.Binaries names for the command, or else the host's own program at the
// command's path, such as Debian's etcd) in the node's network namespace and in a mount
// namespace and root filesystem of its own (see podScript): the host's programs and /etc, and each of the
// container's hostPath volume mounts as a recursive bind mount of the node's path (Root + the volume's path,
// with what is mounted under it, such as the volume protokube mounted there). No other mount of the host is in
// the pod's namespace. It restarts the process when the manifest changes, and when it exits (after 1s, doubling
// up to 10s, as kubelet's back-off); it stops it (SIGTERM, then SIGKILL after 10s) when the manifest is
// removed. Probes, ports, resources and the other containers are ignored.
type Runner struct {
	c Config

	mu   sync.Mutex
	pods map[string]*pod // by manifest file name

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Pod is what Runner.Pods reports of one manifest.
type Pod struct {
	// Manifest is the manifest's file name ("etcd-main.manifest").
	Manifest string
	// PID is the running container process's id; 0 when none runs.
	PID int
	// Starts counts the processes started for the manifest since the Runner first saw it.
	Starts int
	// LastError is why the last start failed or how the last process exited; "" when none did.
	LastError string
	// Log is the file that holds every process's output for this manifest, each start under a header line.
	Log string
}

type pod struct {
	manifest  []byte
	proc      Process
	starts    int
	lastError string
	backoff   time.Duration
	next      time.Time // no start before
}

const (
	poll      = 200 * time.Millisecond
	grace     = 10 * time.Second
	backoff   = time.Second
	backoffUp = 10 * time.Second
)

// Tools are the host's programs a Runner uses.
var Tools = []string{"ip", "unshare", "mount", "umount", "pivot_root", "sh"}

// Start starts a Runner for c. Stop it with Stop.
func Start(c Config) *Runner {
	c.Root = filepath.Clean(c.Root)
	if c.Start == nil {
		c.Start = StartProcess
	}
	if c.Name == "" {
		c.Name = "static pods"
	}
	bins := make(map[string]string, len(c.Binaries))
	for cmd, file := range c.Binaries {
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
		bins[cmd] = file
	}
	c.Binaries = bins
	r := &Runner{c: c, pods: map[string]*pod{}, stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

// Stop stops every pod and the polling, and returns when they have exited. Stopping twice does nothing.
func (r *Runner) Stop() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}

// Pods reports the manifests the Runner runs, sorted by file name.
func (r *Runner) Pods() []Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Pod
	for name, p := range r.pods {
		fp := Pod{Manifest: name, Starts: p.starts, LastError: p.lastError, Log: r.logFile(name)}
		if p.proc != nil && !isDone(p.proc) {
			fp.PID = p.proc.PID()
		}
		out = append(out, fp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest < out[j].Manifest })
	return out
}

// Pod reports one manifest by file name; ok is false when the Runner does not run it.
func (r *Runner) Pod(manifest string) (p Pod, ok bool) {
	for _, p := range r.Pods() {
		if p.Manifest == manifest {
			return p, true
		}
	}
	return Pod{}, false
}

func isDone(p Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

func (r *Runner) logFile(manifest string) string {
	return filepath.Join(r.c.LogDir, strings.TrimSuffix(manifest, ".manifest")+".log")
}

func (r *Runner) run() {
	defer close(r.done)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		r.sync()
		select {
		case <-r.stop:
			r.mu.Lock()
			pods := r.pods
			r.mu.Unlock()
			var wg sync.WaitGroup
			for _, p := range pods {
				if p.proc != nil {
					wg.Add(1)
					go func(p Process) { defer wg.Done(); p.Stop(grace) }(p.proc)
				}
			}
			wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// sync makes the running pods match the manifest directory once.
func (r *Runner) sync() {
	dir := filepath.Join(r.c.Root, r.c.ManifestDir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.manifest"))
	seen := map[string][]byte{}
	for _, f := range files {
		if r.c.Only != nil && !r.c.Only(filepath.Base(f)) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue // removed since the glob: next round
		}
		seen[filepath.Base(f)] = b
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, p := range r.pods {
		if _, ok := seen[name]; !ok {
			if p.proc != nil {
				p.proc.Stop(grace)
			}
			delete(r.pods, name)
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	now := time.Now()
	for _, name := range names {
		b := seen[name]
		p := r.pods[name]
		switch {
		case p == nil:
			p = &pod{manifest: b}
			r.pods[name] = p
		case string(p.manifest) != string(b):
			if p.proc != nil {
				p.proc.Stop(grace)
				p.proc = nil
			}
			p.manifest, p.backoff, p.next = b, 0, time.Time{}
		case p.proc != nil && isDone(p.proc):
			p.lastError = fmt.Sprintf("exited: %v", p.proc.Err())
			if p.proc.Err() == nil {
				p.lastError = "exited: status 0"
			}
			p.proc = nil
			p.backoff = min(max(2*p.backoff, backoff), backoffUp)
			p.next = now.Add(p.backoff)
		}
		if p.proc != nil || now.Before(p.next) {
			continue
		}
		p.starts++
		proc, err := r.start(name, b, p.starts)
		if err != nil {
			p.lastError = err.Error()
			p.backoff = min(max(2*p.backoff, backoff), backoffUp)
			p.next = now.Add(p.backoff)
			appendLog(r.logFile(name), fmt.Sprintf("=== %s: start %d of %s failed: %v\n", r.c.Name, p.starts, name, err))
			continue
		}
		p.proc = proc
	}
}

// staticPod is the part of a Pod the Runner reads (the JSON names of core/v1).
type staticPod struct {
	Spec struct {
		Containers []struct {
			Command []string `json:"command"`
			Args    []string `json:"args"`
			Env     []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
			VolumeMounts []struct {
				Name      string `json:"name"`
				MountPath string `json:"mountPath"`
			} `json:"volumeMounts"`
		} `json:"containers"`
		Volumes []struct {
			Name     string `json:"name"`
			HostPath *struct {
				Path string `json:"path"`
				Type string `json:"type"`
			} `json:"hostPath"`
		} `json:"volumes"`
	} `json:"spec"`
}

// start starts the first container of the manifest b.
func (r *Runner) start(name string, b []byte, n int) (Process, error) {
	var sp staticPod
	if err := yaml.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	if len(sp.Spec.Containers) == 0 {
		return nil, errors.New("the pod has no container")
	}
	c := sp.Spec.Containers[0]
	if len(c.Command) == 0 {
		return nil, errors.New("the container has no command: the static pod runner cannot run an image's entrypoint")
	}
	var binds []bindMount
	for _, vm := range c.VolumeMounts {
		found := false
		for _, v := range sp.Spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			found = true
			if v.HostPath == nil {
				return nil, fmt.Errorf("volume %q: only hostPath volumes are supported", v.Name)
			}
			src := filepath.Join(r.c.Root, v.HostPath.Path)
			if err := ensureHostPath(src, v.HostPath.Type); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			binds = append(binds, bindMount{Source: src, Target: filepath.Clean(vm.MountPath)})
		}
		if !found {
			return nil, fmt.Errorf("volume mount %q: no such volume", vm.Name)
		}
	}
	var bins []bindMount
	if file, ok := r.c.Binaries[c.Command[0]]; ok {
		bins = append(bins, bindMount{Source: file, Target: c.Command[0]})
	}
	rootfs := strings.TrimSuffix(r.logFile(name), ".log") + ".rootfs"
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return nil, err
	}
	script, err := podScript(rootfs, binds, bins)
	if err != nil {
		return nil, err
	}
	args := []string{"netns", "exec", r.c.NetNS, "unshare", "--mount", "--propagation", "slave", "sh", "-c", script, "static-pod"}
	args = append(append(args, c.Command...), c.Args...)
	cmd := exec.CommandContext(context.Background(), "ip", args...)
	cmd.Dir = "/"
	cmd.Env = os.Environ()
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	appendLog(r.logFile(name), fmt.Sprintf("=== %s: start %d of %s in %s: %s\n", r.c.Name, n, name, r.c.NetNS,
		strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")))
	return r.c.Start(cmd, r.logFile(name))
}

// ensureHostPath makes the node's path of a hostPath volume as kubelet does for its type: a directory for ""
// and DirectoryOrCreate, an empty file for FileOrCreate; Directory and File must exist.
func ensureHostPath(path, typ string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil:
		if (typ == "Directory" || typ == "DirectoryOrCreate") && !st.IsDir() {
			return fmt.Errorf("%s is not a directory", path)
		}
		if (typ == "File" || typ == "FileOrCreate") && !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a file", path)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	switch typ {
	case "", "DirectoryOrCreate":
		return os.MkdirAll(path, 0o755)
	case "FileOrCreate":
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	return fmt.Errorf("hostPath %s (type %s) does not exist", path, typ)
}

// bindMount is a bind mount of the pod's namespace: Source (a path of the host) over Target.
type bindMount struct{ Source, Target string }

// podScript is the shell script that makes the pod's filesystem and then runs the container's command ("$@"),
// in a mount namespace of the pod's own. The filesystem is a tmpfs at rootfs holding the host's programs and
// configuration (/usr and the /bin, /lib... links or binds; /etc with the node's resolv.conf and hosts that
// `ip netns exec` bound there; /dev, /proc, /sys) and the pod's volumes (a recursive bind of each Source, with
// what is mounted under it, at Target); the script pivots into it and detaches the host's tree. So the pod holds
// no copy of another node's volume mount (a copy would keep the volume mounted and its loop device busy after
// the host unmounted it, unseen by the host), and the host's directories are never written.
//
// Each of bins is a host file (Source) bound read-only at Target, after the volumes. Over an existing file it is
// bound as is; otherwise Target is made in an overlay of its deepest existing directory (the host's /usr/local/bin
// for /usr/local/bin/kube-apiserver) whose upper layer is a tmpfs of the pod's, detached from the tree after the
// pivot: the pod sees that directory's files (not what is mounted under it) and the binary, and the host's
// directory is not written.
func podScript(rootfs string, binds, bins []bindMount) (string, error) {
	var b strings.Builder
	b.WriteString(`set -e
R=` + shellQuote(rootfs) + `
mount -t tmpfs -o mode=0755 static-pod "$R"
cd "$R"
for d in usr bin sbin lib lib32 lib64 libx32; do
	if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$d"
	elif [ -d "/$d" ]; then mkdir "$d"; mount --bind "/$d" "$d"
	fi
done
mkdir etc dev sys proc tmp run var .old
mount --rbind /etc etc
mount --rbind /dev dev
mount --rbind /sys sys
mount -t proc proc proc
mount -t tmpfs -o mode=1777 tmpfs tmp
`)
	sort.SliceStable(binds, func(i, j int) bool { return len(binds[i].Target) < len(binds[j].Target) })
	for _, m := range binds {
		if !filepath.IsAbs(m.Target) || m.Target == "/" {
			return "", fmt.Errorf("mount path %q: want an absolute path other than /", m.Target)
		}
		st, err := os.Stat(m.Source)
		if err != nil {
			return "", err
		}
		t := shellQuote("." + m.Target)
		if st.IsDir() {
			fmt.Fprintf(&b, "mkdir -p %s\n", t)
		} else {
			fmt.Fprintf(&b, "mkdir -p \"$(dirname %s)\"; : > %s\n", t, t)
		}
		fmt.Fprintf(&b, "mount --rbind %s %s\n", shellQuote(m.Source), t)
	}
	if len(bins) > 0 {
		// binary FILE TARGET: FILE at TARGET (relative to $R), read-only; overlays under .binaries.
		b.WriteString(`mkdir .binaries
mount -t tmpfs -o mode=0700 static-pod-binaries .binaries
n=0
binary() {
	if [ -L "$2" ] || [ ! -f "$2" ]; then
		a=$(dirname "$2")
		while [ ! -d "$a" ]; do a=$(dirname "$a"); done
		if [ "$a" != . ]; then
			n=$((n + 1))
			mkdir ".binaries/upper$n" ".binaries/work$n"
			mount -t overlay -o "lowerdir=$a,upperdir=.binaries/upper$n,workdir=.binaries/work$n" static-pod-binary "$a"
		fi
		mkdir -p "$(dirname "$2")"
		rm -f "$2"
		: > "$2"
	fi
	mount --bind "$1" "$2"
	mount -o remount,bind,ro "$2"
}
`)
	}
	for _, m := range bins {
		if !filepath.IsAbs(m.Target) || m.Target == "/" {
			return "", fmt.Errorf("binary %q: want an absolute path other than /", m.Target)
		}
		if !filepath.IsAbs(m.Source) {
			return "", fmt.Errorf("binary %q: the host file %q is not an absolute path", m.Target, m.Source)
		}
		st, err := os.Stat(m.Source)
		if err != nil {
			return "", fmt.Errorf("binary %q: %w", m.Target, err)
		}
		if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("binary %q: %s is not an executable file", m.Target, m.Source)
		}
		fmt.Fprintf(&b, "binary %s %s\n", shellQuote(m.Source), shellQuote("."+filepath.Clean(m.Target)))
	}
	b.WriteString(`pivot_root . .old
cd /
umount -l /.old
rmdir /.old
`)
	if len(bins) > 0 {
		b.WriteString("umount -l /.binaries\nrmdir /.binaries\n")
	}
	b.WriteString(`exec "$@"
`)
	return b.String(), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func appendLog(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(line)
}
