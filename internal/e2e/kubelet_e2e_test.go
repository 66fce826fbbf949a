//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kubeup.dev/kubeup/tasks/nodetasks"
)

const testManifestDir = "/etc/kubernetes/manifests"

// writeManifest writes pod as nodetasks.ManifestFile renders it, atomically, under root.
func writeManifest(t *testing.T, root, name string, pod *nodetasks.Pod) {
	t.Helper()
	y, err := pod.YAML()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, testManifestDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// shellPod is a static pod whose container runs script in sh with env GEN=gen and the node's /mnt/x at /mnt/x.
func shellPod(script, gen string) *nodetasks.Pod {
	return &nodetasks.Pod{
		Metadata: nodetasks.ObjectMeta{Name: "shell", Namespace: "kube-system"},
		Spec: nodetasks.PodSpec{
			HostNetwork: true,
			Containers: []nodetasks.Container{{
				Name: "shell", Image: "registry.example/ignored:1",
				Command:      []string{"sh", "-c"},
				Args:         []string{script},
				Env:          []nodetasks.EnvVar{{Name: "GEN", Value: gen}},
				VolumeMounts: []nodetasks.VolumeMount{{Name: "x", MountPath: "/mnt/x"}},
			}},
			Volumes: []nodetasks.Volume{{Name: "x", HostPath: &nodetasks.HostPathVolumeSource{Path: "/mnt/x", Type: "DirectoryOrCreate"}}},
		},
	}
}

// waitFor polls cond every 50ms until it holds or 15s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s", what)
		}
	}
}

func sameNamespace(t *testing.T, a, b string) bool {
	t.Helper()
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(b, &sb); err != nil {
		t.Fatal(err)
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// The fake kubelet runs a manifest's command in the node's network namespace with the node's hostPath mounted,
// restarts it when the manifest changes, and stops it when the manifest is removed; the host's /mnt is never
// written.
func TestKubeletRunsRestartsAndStopsAStaticPod(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "mount")
	node := Network(t).Node(t, "kubelet")
	root := t.TempDir()
	// The node's /mnt/x is a filesystem of its own, as a volume protokube mounted: the pod must see it, not the
	// directory under it. Another node's volume, mounted before the pod starts, must not be in the pod's mount
	// namespace at all: a copy there would keep it mounted after the host unmounts it.
	vol, other := filepath.Join(root, "mnt/x"), filepath.Join(t.TempDir(), "other-node-volume")
	for _, d := range []string{vol, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		Unmount(t, d)
		MustRun(t, "mount", "-t", "tmpfs", "kubeup-e2e", d)
	}
	node.SetResolver("10.9.9.9")
	k := RunStaticPods(t, node, root, testManifestDir)
	out := filepath.Join(root, "mnt/x/out")
	const script = `echo started $GEN > /mnt/x/out; grep -q '^nameserver 10.9.9.9$' /etc/resolv.conf && echo resolver >> /mnt/x/out; sleep 600`
	running := func(want string) FakePod {
		t.Helper()
		var pod FakePod
		waitFor(t, "the pod to write "+want, func() bool {
			b, _ := os.ReadFile(out)
			var ok bool
			pod, ok = k.Pod("shell.manifest")
			return ok && pod.PID != 0 && string(b) == want
		})
		return pod
	}

	writeManifest(t, root, "shell.manifest", shellPod(script, "1"))
	first := running("started 1\nresolver\n")
	if !sameNamespace(t, "/proc/"+strconv.Itoa(first.PID)+"/ns/net", "/run/netns/"+node.Name) {
		t.Errorf("the pod's process is not in the node's network namespace")
	}
	if sameNamespace(t, "/proc/"+strconv.Itoa(first.PID)+"/ns/mnt", "/proc/self/ns/mnt") {
		t.Errorf("the pod's process is in the host's mount namespace")
	}
	if _, err := os.Stat("/mnt/x"); err == nil { // not made on the host, even for a moment
		t.Errorf("/mnt/x exists on the host: the fake kubelet wrote the host's /mnt")
	}
	firstStart, _ := processStart(first.PID)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(first.PID) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), other) || strings.Contains(string(b), root+"/") {
		t.Errorf("the pod's mount namespace holds mounts of the host's tree:\n%s", b)
	}

	writeManifest(t, root, "shell.manifest", shellPod(script, "2"))
	second := running("started 2\nresolver\n")
	if alive(first.PID, firstStart) {
		t.Errorf("the first process %d still runs after the manifest changed", first.PID)
	}
	if second.Starts != 2 {
		t.Errorf("Starts = %d after a change, want 2", second.Starts)
	}
	secondStart, _ := processStart(second.PID)

	if err := os.Remove(filepath.Join(root, testManifestDir, "shell.manifest")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod to be stopped", func() bool { _, ok := k.Pod("shell.manifest"); return !ok })
	if alive(second.PID, secondStart) {
		t.Errorf("process %d still runs after its manifest was removed", second.PID)
	}
	if b, _ := os.ReadFile(second.Log); !strings.Contains(string(b), "=== fake kubelet: start 2 of shell.manifest") {
		t.Errorf("the log %s does not record the second start:\n%s", second.Log, b)
	}
}

// A container that exits is started again, with a back-off; Stop ends a running one.
func TestKubeletRestartsAnExitedPodAndStops(t *testing.T) {
	RequireRoot(t)
	node := Network(t).Node(t, "kubelet")
	root := t.TempDir()
	k := RunStaticPods(t, node, root, testManifestDir)
	writeManifest(t, root, "crash.manifest", shellPod(`echo run >> /mnt/x/runs; exit 3`, "1"))
	waitFor(t, "a second run", func() bool {
		b, _ := os.ReadFile(filepath.Join(root, "mnt/x/runs"))
		return strings.Count(string(b), "run\n") >= 2
	})
	if pod, _ := k.Pod("crash.manifest"); !strings.Contains(pod.LastError, "exit status 3") {
		t.Errorf("LastError = %q, want the exit status 3", pod.LastError)
	}

	writeManifest(t, root, "sleep.manifest", shellPod(`sleep 600`, "1"))
	var pod FakePod
	waitFor(t, "the sleeper", func() bool { pod, _ = k.Pod("sleep.manifest"); return pod.PID != 0 })
	start, _ := processStart(pod.PID)
	k.Stop()
	if alive(pod.PID, start) {
		t.Errorf("process %d still runs after Stop", pod.PID)
	}
	if pods := k.Pods(); len(pods) != 2 || pods[0].PID != 0 || pods[1].PID != 0 {
		t.Errorf("after Stop: %+v, want both pods without a process", pods)
	}
}

// A command that WithBinaries maps to a host file runs that file at the path the manifest names, read-only, in
// the pod's root filesystem only: made in an overlay where the host has no such file (its directory's other files
// still there), bound over the host's file where it has one; the host's directories are never written.
func TestKubeletRunsAHostFileAtTheCommandsPath(t *testing.T) {
	RequireRoot(t)
	node := Network(t).Node(t, "kubelet")
	root := t.TempDir()
	tool := filepath.Join(t.TempDir(), "tool")
	// $0 is the path the process was started as. sh itself, from the pod's /usr/bin and with the libraries of
	// its /usr/lib, shows that the overlaid directories keep the host's files.
	script := "#!/bin/sh\necho \"$0 $GEN\" >> /mnt/x/out\n" +
		"if (echo >> \"$0\") 2>/dev/null; then echo writable; else echo read-only; fi >> /mnt/x/out\nexec sleep 600\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	const (
		newDir = "/usr/lib/kubeup-e2e-absent/bin/tool" // no such directory on the host
		inDir  = "/usr/bin/kubeup-e2e-tool"            // a directory of the host, without the file
		over   = "/usr/bin/true"                       // a file of the host
	)
	for _, p := range []string{filepath.Dir(filepath.Dir(newDir)), inDir} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists on the host: the test needs it absent", p)
		}
	}
	k := RunStaticPods(t, node, root, testManifestDir, WithBinaries(map[string]string{newDir: tool}),
		WithBinaries(map[string]string{inDir: tool, over: tool}))
	out := filepath.Join(root, "mnt/x/out")
	defer func() {
		if p, ok := k.Pod("tool.manifest"); ok && t.Failed() {
			b, _ := os.ReadFile(p.Log)
			o, _ := os.ReadFile(out)
			t.Logf("the pod's log:\n%s\n%s:\n%s", b, out, o)
		}
	}()
	for i, cmd := range []string{newDir, inDir, over} {
		gen := strconv.Itoa(i)
		pod := shellPod("", gen)
		pod.Spec.Containers[0].Command, pod.Spec.Containers[0].Args = []string{cmd}, nil
		writeManifest(t, root, "tool.manifest", pod)
		want := cmd + " " + gen + "\nread-only\n"
		waitFor(t, cmd+" to run the host file", func() bool {
			b, _ := os.ReadFile(out)
			p, ok := k.Pod("tool.manifest")
			return ok && p.PID != 0 && string(b) == want
		})
		if err := os.Remove(out); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(newDir))); err == nil {
		t.Errorf("%s was made on the host", filepath.Dir(filepath.Dir(newDir)))
	}
	if _, err := os.Stat(inDir); err == nil {
		t.Errorf("%s was made on the host", inDir)
	}
	if b, err := os.ReadFile(over); err != nil || strings.Contains(string(b), "GEN") {
		t.Errorf("the host's %s was changed (%v)", over, err)
	}
}
