package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// FakeKubelet is a stand-in for kubelet in tests, not product code: it runs the static pods of one test node.
// Every 200ms it reads the node's manifest directory; for each *.manifest (a YAML Pod, as nodetasks.ManifestFile
// writes it) it runs the first container's command and args, with the container's env, as a process on the
// host (the image is ignored: the binary must be installed on the host, such as Debian's etcd) in the node's
// network namespace and in a private mount namespace where each of the container's hostPath volume mounts is a
// bind mount of the node's path (root + the volume's path). It restarts the process when the manifest changes,
// and when it exits (after 1s, doubling up to 10s, as kubelet's back-off); it stops it (SIGTERM, then SIGKILL
// after 10s) when the manifest is removed. Probes, ports, resources and the other containers are ignored.
//
// The mount namespace never writes the host's directories: a mount point missing on the host is made visible by
// bind-mounting the node's copy of its deepest existing ancestor (root/mnt over /mnt for /mnt/master-x/data) in
// the pod's namespace. An ancestor that is / itself cannot be covered: such a pod fails to start.
type FakeKubelet struct {
	node        *NetNode
	root        string
	manifestDir string
	logDir      string
	t           testing.TB

	mu   sync.Mutex
	pods map[string]*fakePod // by manifest file name

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// FakePod is what FakeKubelet.Pods reports of one manifest.
type FakePod struct {
	// Manifest is the manifest's file name ("etcd-main.manifest").
	Manifest string
	// PID is the running container process's id; 0 when none runs.
	PID int
	// Starts counts the processes started for the manifest since the FakeKubelet first saw it.
	Starts int
	// LastError is why the last start failed or how the last process exited; "" when none did.
	LastError string
	// Log is the file that holds every process's output for this manifest, each start under a header line.
	Log string
}

type fakePod struct {
	manifest  []byte
	proc      *Process
	starts    int
	lastError string
	backoff   time.Duration
	next      time.Time // no start before
}

const (
	fakeKubeletPoll      = 200 * time.Millisecond
	fakeKubeletGrace     = 10 * time.Second
	fakeKubeletBackoff   = time.Second
	fakeKubeletBackoffUp = 10 * time.Second
)

// RunStaticPods starts a FakeKubelet for node, whose filesystem is root (a directory of the host), running the
// pods of root+manifestDir ("/etc/kubernetes/manifests"). Logs go under a t.TempDir(). It is stopped in t.Cleanup.
func RunStaticPods(t testing.TB, node *NetNode, root, manifestDir string) *FakeKubelet {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "ip", "unshare", "mount", "sh")
	k := &FakeKubelet{node: node, root: filepath.Clean(root), manifestDir: manifestDir, logDir: t.TempDir(), t: t,
		pods: map[string]*fakePod{}, stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(k.Stop)
	go k.run()
	return k
}

// Stop stops every pod and the polling, and returns when they have exited. Stopping twice does nothing.
func (k *FakeKubelet) Stop() {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
}

// Pods reports the manifests the FakeKubelet runs, sorted by file name.
func (k *FakeKubelet) Pods() []FakePod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []FakePod
	for name, p := range k.pods {
		fp := FakePod{Manifest: name, Starts: p.starts, LastError: p.lastError, Log: k.logFile(name)}
		if p.proc != nil && !isDone(p.proc) {
			fp.PID = p.proc.PID()
		}
		out = append(out, fp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest < out[j].Manifest })
	return out
}

// Pod reports one manifest by file name; ok is false when the FakeKubelet does not run it.
func (k *FakeKubelet) Pod(manifest string) (pod FakePod, ok bool) {
	for _, p := range k.Pods() {
		if p.Manifest == manifest {
			return p, true
		}
	}
	return FakePod{}, false
}

func isDone(p *Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

func (k *FakeKubelet) logFile(manifest string) string {
	return filepath.Join(k.logDir, strings.TrimSuffix(manifest, ".manifest")+".log")
}

func (k *FakeKubelet) run() {
	defer close(k.done)
	tick := time.NewTicker(fakeKubeletPoll)
	defer tick.Stop()
	for {
		k.sync()
		select {
		case <-k.stop:
			k.mu.Lock()
			pods := k.pods
			k.mu.Unlock()
			var wg sync.WaitGroup
			for _, p := range pods {
				if p.proc != nil {
					wg.Add(1)
					go func(p *Process) { defer wg.Done(); p.Stop(fakeKubeletGrace) }(p.proc)
				}
			}
			wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// sync makes the running pods match the manifest directory once.
func (k *FakeKubelet) sync() {
	dir := filepath.Join(k.root, k.manifestDir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.manifest"))
	seen := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // removed since the glob: next round
		}
		seen[filepath.Base(f)] = b
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, p := range k.pods {
		if _, ok := seen[name]; !ok {
			if p.proc != nil {
				p.proc.Stop(fakeKubeletGrace)
			}
			delete(k.pods, name)
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
		p := k.pods[name]
		switch {
		case p == nil:
			p = &fakePod{manifest: b}
			k.pods[name] = p
		case string(p.manifest) != string(b):
			if p.proc != nil {
				p.proc.Stop(fakeKubeletGrace)
				p.proc = nil
			}
			p.manifest, p.backoff, p.next = b, 0, time.Time{}
		case p.proc != nil && isDone(p.proc):
			p.lastError = fmt.Sprintf("exited: %v", p.proc.Err())
			if p.proc.Err() == nil {
				p.lastError = "exited: status 0"
			}
			p.proc = nil
			p.backoff = min(max(2*p.backoff, fakeKubeletBackoff), fakeKubeletBackoffUp)
			p.next = now.Add(p.backoff)
		}
		if p.proc != nil || now.Before(p.next) {
			continue
		}
		p.starts++
		proc, err := k.start(name, b, p.starts)
		if err != nil {
			p.lastError = err.Error()
			p.backoff = min(max(2*p.backoff, fakeKubeletBackoff), fakeKubeletBackoffUp)
			p.next = now.Add(p.backoff)
			appendLog(k.logFile(name), fmt.Sprintf("=== fake kubelet: start %d of %s failed: %v\n", p.starts, name, err))
			continue
		}
		p.proc = proc
	}
}

// staticPod is the part of a Pod the FakeKubelet reads (the JSON names of core/v1).
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
func (k *FakeKubelet) start(name string, b []byte, n int) (*Process, error) {
	var pod staticPod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, errors.New("the pod has no container")
	}
	c := pod.Spec.Containers[0]
	if len(c.Command) == 0 {
		return nil, errors.New("the container has no command: the fake kubelet cannot run an image's entrypoint")
	}
	var binds []bindMount
	for _, vm := range c.VolumeMounts {
		found := false
		for _, v := range pod.Spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			found = true
			if v.HostPath == nil {
				return nil, fmt.Errorf("volume %q: only hostPath volumes are supported", v.Name)
			}
			src := filepath.Join(k.root, v.HostPath.Path)
			if err := ensureHostPath(src, v.HostPath.Type); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			binds = append(binds, bindMount{Source: src, Target: filepath.Clean(vm.MountPath)})
		}
		if !found {
			return nil, fmt.Errorf("volume mount %q: no such volume", vm.Name)
		}
	}
	plan, err := planMounts(k.root, binds)
	if err != nil {
		return nil, err
	}
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, m := range plan {
		fmt.Fprintf(&script, "mount --bind %s %s\n", shellQuote(m.Source), shellQuote(m.Target))
	}
	script.WriteString(`exec "$@"` + "\n")
	args := append([]string{"--mount", "--propagation", "private", "sh", "-c", script.String(), "fake-kubelet"}, c.Command...)
	args = append(args, c.Args...)
	cmd := k.node.Command(context.Background(), "unshare", args...)
	cmd.Dir = "/"
	cmd.Env = os.Environ()
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	appendLog(k.logFile(name), fmt.Sprintf("=== fake kubelet: start %d of %s in %s: %s\n", n, name, k.node.Name,
		strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")))
	return startProcess(cmd, k.logFile(name))
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

// planMounts orders the pod's bind mounts, ancestors first, and adds what makes every target exist without
// writing the host: a target missing on the host is covered by binding root's copy of its deepest existing
// ancestor over that ancestor (which then holds the target, since the source exists under root). A target
// covered by an earlier bind that already shows its source needs no bind of its own.
func planMounts(root string, binds []bindMount) ([]bindMount, error) {
	sort.SliceStable(binds, func(i, j int) bool { return len(binds[i].Target) < len(binds[j].Target) })
	var plan []bindMount
	// visible returns the host path that the pod will see at target after the binds planned so far.
	visible := func(target string) (string, bool) {
		for i := len(plan) - 1; i >= 0; i-- {
			m := plan[i]
			if target == m.Target || strings.HasPrefix(target, m.Target+"/") {
				return m.Source + strings.TrimPrefix(target, m.Target), true
			}
		}
		return target, false
	}
	for _, b := range binds {
		at, covered := visible(b.Target)
		if at == b.Source {
			continue
		}
		if _, err := os.Lstat(at); err != nil {
			if covered {
				// Under an earlier bind of a node path: make the mount point there, in the node's tree.
				if err := mkMountPoint(at, b.Source); err != nil {
					return nil, err
				}
			} else {
				ancestor := filepath.Dir(b.Target)
				for ancestor != "/" {
					if st, err := os.Stat(ancestor); err == nil && st.IsDir() {
						break
					}
					ancestor = filepath.Dir(ancestor)
				}
				if ancestor == "/" {
					return nil, fmt.Errorf("mount point %s: neither it nor a directory above it but / is on the host, and the fake kubelet never writes the host's /", b.Target)
				}
				cover := filepath.Join(root, ancestor)
				if err := os.MkdirAll(cover, 0o755); err != nil {
					return nil, err
				}
				plan = append(plan, bindMount{Source: cover, Target: ancestor})
				if at, _ = visible(b.Target); at == b.Source {
					continue
				}
				if err := mkMountPoint(at, b.Source); err != nil {
					return nil, err
				}
			}
		}
		plan = append(plan, b)
	}
	return plan, nil
}

// mkMountPoint makes at, in the node's tree, a directory or an empty file as source is.
func mkMountPoint(at, source string) error {
	st, err := os.Stat(source)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return os.MkdirAll(at, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(at, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
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
