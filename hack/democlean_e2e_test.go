//go:build e2e

// Package hack holds the tests of the demo's scripts (demo.sh, demo-clean.sh); the program under it (perftable)
// has its own.
package hack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/internal/e2e"
)

// TestDemoCleanTwice: make demo-clean removes a network namespace and a link it recorded even when each is
// gone by the time it deletes it (deleting a namespace removes its veth pair asynchronously: `make demo-clean`
// failed with `Cannot find device "kubeup-demo-v2"`), and a second run right after it has nothing to do and
// succeeds. The race is provoked every time: an `ip` first on PATH deletes the namespace or link itself right
// before the script's own delete reaches the real `ip`.
func TestDemoCleanTwice(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "ip")
	realIP, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("demo-clean.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo")
	ns := fmt.Sprintf("kubeup-democlean-%d", os.Getpid())
	link, peer := fmt.Sprintf("kdc%d", os.Getpid()), fmt.Sprintf("kdcp%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(realIP, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { // whatever the script left
		exec.Command(realIP, "netns", "del", ns).Run()
		exec.Command(realIP, "link", "del", link).Run()
	})
	ip("netns", "add", ns)
	ip("link", "add", link, "type", "veth", "peer", "name", peer)
	e2e.WriteFile(t, filepath.Join(demo, "made", "netns"), ns+"\n")
	e2e.WriteFile(t, filepath.Join(demo, "made", "links"), link+"\n")
	bin := filepath.Join(dir, "bin")
	e2e.WriteFile(t, filepath.Join(bin, "ip"), fmt.Sprintf(`#!/bin/sh
# The kernel's asynchronous removal, at the worst moment: what the script deletes is gone just before.
case "$1 $2" in
"link del"|"netns del") %[1]q "$1" del "$3" 2>/dev/null ;;
esac
exec %[1]q "$@"
`, realIP))
	if err := os.Chmod(filepath.Join(bin, "ip"), 0o755); err != nil {
		t.Fatal(err)
	}

	for run := 1; run <= 2; run++ {
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "DEMO_DIR="+demo, "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo-clean run %d: %v\n%s", run, err, out)
		}
		want := "removed everything the demo made"
		if run == 2 {
			want = "nothing to clean"
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("demo-clean run %d says %q, want %q", run, out, want)
		}
	}
	for _, p := range []string{"/run/netns/" + ns, "/sys/class/net/" + link, "/sys/class/net/" + peer, demo} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", p, err)
		}
	}
}
