//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two nodes on a Network reach each other and the host; a node's resolver and hosts files are what its
// commands see; after the cleanups no namespace, link or /etc/netns directory is left.
func TestNetworkNodesPingEachOtherAndLeaveNothing(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip", "ping", "nsenter")
	var bridge string
	var nodes []*NetNode
	t.Run("up", func(t *testing.T) {
		nw := Network(t)
		bridge = nw.Bridge
		a, b := nw.Node(t, "a"), nw.Node(t, "b")
		nodes = []*NetNode{a, b}
		for _, tt := range []struct {
			from *NetNode
			to   string
		}{{a, b.IP}, {b, a.IP}, {a, nw.Gateway}, {a, "127.0.0.1"}} {
			if out, err := tt.from.Run(context.Background(), "ping", "-c1", "-W2", tt.to); err != nil {
				t.Errorf("ping from %s to %s: %v\n%s", tt.from.Name, tt.to, err, out)
			}
		}
		MustRun(t, "ping", "-c1", "-W2", a.IP) // the host reaches the nodes

		// Each command sees its node's address, in the node's namespace (Command) or with the host's mounts
		// (CommandSharingMounts).
		ctx := context.Background()
		for _, cmd := range []*NetNode{a, b} {
			out := cmd.MustRun(t, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
			if !strings.Contains(out, " "+cmd.IP+"/24 ") {
				t.Errorf("%s: eth0 is %q, want %s/24", cmd.Name, out, cmd.IP)
			}
		}
		out, err := a.CommandSharingMounts(ctx, "ip", "-4", "-o", "addr", "show", "dev", "eth0").CombinedOutput()
		if err != nil || !strings.Contains(string(out), " "+a.IP+"/24 ") {
			t.Errorf("CommandSharingMounts: eth0 is %q (%v), want %s/24", out, err, a.IP)
		}

		a.SetResolver(nw.Gateway)
		a.SetHosts("127.0.0.1 localhost\n" + b.IP + " b.example\n")
		if got := a.MustRun(t, "cat", "/etc/resolv.conf"); !strings.Contains(got, "nameserver "+nw.Gateway+"\n") {
			t.Errorf("the node's /etc/resolv.conf is %q, want nameserver %s", got, nw.Gateway)
		}
		if got := a.MustRun(t, "getent", "hosts", "b.example"); !strings.HasPrefix(got, b.IP+" ") {
			t.Errorf("getent hosts b.example in %s: %q, want %s", a.Name, got, b.IP)
		}
		if got := b.MustRun(t, "cat", "/etc/hosts"); strings.Contains(got, "b.example") {
			t.Errorf("node b sees node a's hosts file: %q", got)
		}

		// A process started on a node, and one started behind Start's back, are ended with the node.
		p := a.Start(t, a.Command(ctx, "sleep", "600"), filepath.Join(t.TempDir(), "sleep.log"))
		if p.Err() != nil {
			t.Fatal(p.Err())
		}
		stray := b.Command(ctx, "sleep", "600")
		if err := stray.Start(); err != nil {
			t.Fatal(err)
		}
		go stray.Wait()
	})
	if t.Failed() {
		return
	}

	links := MustRun(t, "ip", "-o", "link")
	netns := MustRun(t, "ip", "netns", "list")
	if strings.Contains(links, bridge+":") {
		t.Errorf("the bridge %s is left:\n%s", bridge, links)
	}
	for _, n := range nodes {
		if strings.Contains(netns, n.Name) {
			t.Errorf("the namespace %s is left:\n%s", n.Name, netns)
		}
		if strings.Contains(links, n.Veth+"@") || strings.Contains(links, n.Veth+":") {
			t.Errorf("the link %s is left:\n%s", n.Veth, links)
		}
		if _, err := os.Stat(n.EtcDir()); err == nil {
			t.Errorf("%s is left", n.EtcDir())
		}
	}
}

// A node's Process stops on SIGTERM, and Kill ends one that ignores it.
func TestNetnsProcessStopAndKill(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "ip")
	nw := Network(t)
	n := nw.Node(t, "p")
	ctx := context.Background()
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		script string
		grace  time.Duration
	}{
		{"terminates", "sleep 600", 5 * time.Second},
		{"ignores SIGTERM", "trap '' TERM; sleep 600 & wait; sleep 600", 200 * time.Millisecond},
		{"killed", "sleep 600", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := n.Start(t, n.Command(ctx, "sh", "-c", tt.script), filepath.Join(dir, "p.log"))
			time.Sleep(100 * time.Millisecond)
			p.Stop(tt.grace)
			select {
			case <-p.Done():
			default:
				t.Fatal("Stop returned before the process exited")
			}
			if alive(p.PID(), p.start) {
				t.Errorf("process %d still runs", p.PID())
			}
		})
	}
}

// netnsChildEnv makes the test binary play a test process that dies with a network up.
const netnsChildEnv = "KUBEUP_E2E_NETNS_CHILD"

// A test process killed with a network up (a bridge, a node with a process in it and an /etc/netns directory)
// leaves them behind; the next run's reap removes them all.
func TestNetnsLeftoversOfAKilledRunAreReaped(t *testing.T) {
	if ready := os.Getenv(netnsChildEnv); ready != "" {
		nw := Network(t)
		n := nw.Node(t, "left")
		n.SetResolver(nw.Gateway)
		n.Start(t, n.Command(context.Background(), "sleep", "600"), filepath.Join(t.TempDir(), "sleep.log"))
		if err := os.WriteFile(ready, []byte(nw.Bridge+" "+n.Name+" "+n.Veth), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		return
	}
	RequireRoot(t)
	RequireTools(t, "ip")
	t.Setenv(RegistryDirEnv, filepath.Join(t.TempDir(), "registry"))
	readyFile := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNetnsLeftoversOfAKilledRunAreReaped$", "-test.v")
	child.Env = append(os.Environ(), netnsChildEnv+"="+readyFile)
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	var left []string
	for len(left) == 0 {
		if b, err := os.ReadFile(readyFile); err == nil {
			left = strings.Fields(string(b))
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
	t.Cleanup(func() { Reap() })
	bridge, ns, veth := left[0], left[1], left[2]
	for _, p := range []string{"/sys/class/net/" + bridge, "/sys/class/net/" + veth, "/run/netns/" + ns, "/etc/netns/" + ns} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the killed child's %s is gone already: the test proves nothing", p)
		}
	}

	report := Reap()
	t.Logf("reap:\n%s", strings.Join(report, "\n"))
	for _, p := range []string{"/sys/class/net/" + bridge, "/sys/class/net/" + veth, "/run/netns/" + ns, "/etc/netns/" + ns} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left after the reap", p)
		}
	}
	if !strings.Contains(strings.Join(report, "\n"), "killed process") {
		t.Errorf("the reap killed no process, want the node's sleep killed")
	}
}
