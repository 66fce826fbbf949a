//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary play the test process that dies without cleaning up.
const childEnv = "KUBEUP_E2E_REAP_CHILD"

// A test process that dies without running its cleanups (killed, or panicking at -timeout) leaves a mounted loop
// device and a process behind; the next test process undoes them, and leaves a live process's things alone.
func TestLeftoversOfAKilledRunAreUndoneByTheNext(t *testing.T) {
	if ready := os.Getenv(childEnv); ready != "" {
		leaveThingsBehind(t, ready)
		return
	}
	RequireRoot(t)
	RequireTools(t, "losetup", "mkfs.ext4", "mount")
	registry := filepath.Join(t.TempDir(), "registry")
	t.Setenv(RegistryDirEnv, registry)

	// A live owner: this process. What it registered stays.
	start, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	liveDir := t.TempDir()
	live := filepath.Join(registry, fmt.Sprintf("%d-%d", os.Getpid(), start))
	if err := os.MkdirAll(live, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(record{Kind: kindDir, Path: liveDir})
	if err := os.WriteFile(filepath.Join(live, "000001-dir.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}

	// The child sets up its things, says so, and is killed: none of its t.Cleanup functions run.
	readyFile := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeftoversOfAKilledRunAreUndoneByTheNext$", "-test.v")
	child.Env = append(os.Environ(), childEnv+"="+readyFile)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	var left struct{ Dev, MountPoint string }
	for {
		if b, err := os.ReadFile(readyFile); err == nil {
			if err := json.Unmarshal(b, &left); err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the child exited before it was ready: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	child.Process.Kill()
	<-exited
	// Whatever happens below, leave nothing on this machine.
	t.Cleanup(func() { Reap() })

	if !mounted(left.MountPoint) {
		t.Fatalf("the killed child's mount at %s is gone already: the test proves nothing\n%s", left.MountPoint, out.String())
	}
	sleeper := findChildRecord(t, registry, kindProcess)
	if !alive(sleeper.PID, sleeper.Start) {
		t.Fatalf("the killed child's background process %d is gone already: the test proves nothing", sleeper.PID)
	}

	report := Reap()
	t.Logf("reap:\n%s", strings.Join(report, "\n"))
	if mounted(left.MountPoint) {
		t.Errorf("%s is still mounted after the reap", left.MountPoint)
	}
	if b, err := os.ReadFile("/sys/block/" + filepath.Base(left.Dev) + "/loop/backing_file"); err == nil {
		t.Errorf("%s is still attached (to %s) after the reap", left.Dev, strings.TrimSpace(string(b)))
	}
	if _, err := os.Stat(left.MountPoint); err == nil {
		t.Errorf("the mount point %s is still there after the reap", left.MountPoint)
	}
	if alive(sleeper.PID, sleeper.Start) {
		t.Errorf("process %d still runs after the reap", sleeper.PID)
	}
	entries, _ := os.ReadDir(registry)
	if len(entries) != 1 || entries[0].Name() != filepath.Base(live) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("registry holds %v after the reap, want only the live process's %s", names, filepath.Base(live))
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live process's directory was touched: %v", err)
	}
}

// leaveThingsBehind is the child: a loop device with a mounted filesystem and a background process, registered as
// the helpers register them; then it waits to be killed.
func leaveThingsBehind(t *testing.T, readyFile string) {
	dev := LoopDevice(t, 32<<20)
	MustRun(t, "mkfs.ext4", "-q", dev)
	mp, err := os.MkdirTemp("", "kubeup-e2e-reap-mnt-")
	if err != nil {
		t.Fatal(err)
	}
	register(t, record{Kind: kindDir, Path: mp})
	Unmount(t, mp)
	MustRun(t, "mount", dev, mp)
	sleeper := exec.Command("sleep", "600")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := processStart(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	register(t, record{Kind: kindProcess, PID: sleeper.Process.Pid, Start: start, Group: true})
	b, _ := json.Marshal(map[string]string{"Dev": dev, "MountPoint": mp})
	if err := os.WriteFile(readyFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour)
}

// findChildRecord returns the one record of kind that a process other than this one registered.
func findChildRecord(t *testing.T, registry, kind string) record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(registry, "*", "*-"+kind+".json"))
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(filepath.Dir(f)), fmt.Sprint(os.Getpid())+"-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Fatalf("no %s record of the child in %s", kind, registry)
	return record{}
}
