package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// Nodes of a test as network namespaces: a Net is a Linux bridge on the host with a /24 of its own, and each
// NetNode a named network namespace (ip netns) joined to the bridge by a veth pair. The host reaches every node
// at its IP, and every node reaches the host at the Net's Gateway (not at 127.0.0.x: a namespace has its own
// loopback). Nothing routes out of the bridge. Everything is removed in t.Cleanup and registered for the next
// run's reap (see reap.go).

// netBase is the first two octets of the nodes' addresses: the bridge number N gives the /24 netBase.N.0.
const netBase = "10.231"

// Net is a Linux bridge on the host, with the address Gateway, that joins the NetNodes of a test.
type Net struct {
	// Bridge is the bridge's name on the host: kubeup-br<N>.
	Bridge string
	// Gateway is the host's address on the bridge ("10.231.N.1"): the nodes' default route, and where they
	// reach a server the test runs on the host (listening on Gateway or on all addresses).
	Gateway string
	// Subnet is the bridge's network, "10.231.N.0/24".
	Subnet string

	t      testing.TB
	n      int    // the bridge number N
	suffix string // random, in every namespace name: unique per Net
	mu     sync.Mutex
	nodes  map[string]*NetNode
	next   int // the last octet of the next node's address
}

// NetNode is a network namespace on a Net: its own loopback (up) and an eth0 with IP/24, its default route via
// the Net's Gateway.
type NetNode struct {
	// Name is the network namespace's name, as `ip netns` knows it (/run/netns/Name).
	Name string
	// IP is the node's address on the Net ("10.231.N.2").
	IP string
	// Net is the network the node is on.
	Net *Net
	// Veth is the host's end of the node's veth pair, a port of the bridge.
	Veth string

	t testing.TB
}

// Network creates a bridge on the host with a free name kubeup-br<N> and the address 10.231.N.1/24, up, for a
// free N (no address of the host in 10.231.N.0/24). It is deleted in t.Cleanup, after the nodes.
func Network(t testing.TB) *Net {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "ip")
	suffix := make([]byte, 4)
	rand.Read(suffix)
	nw := &Net{t: t, suffix: hex.EncodeToString(suffix), nodes: map[string]*NetNode{}, next: 2}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; n < 255 && nw.Bridge == ""; n++ {
		if subnetInUse(fmt.Sprintf("%s.%d.0/24", netBase, n)) {
			continue
		}
		name := fmt.Sprintf("kubeup-br%d", n)
		if _, err := os.Stat("/sys/class/net/" + name); err == nil {
			continue
		}
		// Creating the link is the lock: another test process that wants N finds it taken.
		if _, err := Run(ctx, "ip", "link", "add", name, "type", "bridge"); err != nil {
			continue
		}
		nw.Bridge, nw.n = name, n
	}
	if nw.Bridge == "" {
		t.Fatalf("no free bridge kubeup-br<N> with a free %s.N.0/24", netBase)
	}
	nw.Gateway = fmt.Sprintf("%s.%d.1", netBase, nw.n)
	nw.Subnet = fmt.Sprintf("%s.%d.0/24", netBase, nw.n)
	unreg := registerLink(t, nw.Bridge)
	t.Cleanup(func() {
		defer unreg()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := Run(ctx, "ip", "link", "del", nw.Bridge); err != nil {
			t.Errorf("deleting the bridge: %v", err)
		}
	})
	MustRun(t, "ip", "addr", "add", nw.Gateway+"/24", "dev", nw.Bridge)
	MustRun(t, "ip", "link", "set", nw.Bridge, "up")
	return nw
}

// subnetInUse reports whether an address of the host lies in cidr.
func subnetInUse(cidr string) bool {
	_, subnet, _ := net.ParseCIDR(cidr)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
			return true
		}
	}
	return false
}

var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// Node creates a network namespace kubeup-<name>-<suffix of the Net> on the Net: a veth pair whose host end
// (kubeup-<N>v<octet>) is a port of the bridge and whose other end is the namespace's eth0, with the next free
// address of the Net, up; lo up; the default route via the Gateway. name (lower-case letters, digits, '-') must
// be unique on the Net. The namespace, its links and its /etc/netns directory are removed in t.Cleanup, after
// every process still in the namespace is killed.
func (nw *Net) Node(t testing.TB, name string) *NetNode {
	t.Helper()
	if !nodeName.MatchString(name) {
		t.Fatalf("node name %q: want 1 to 32 lower-case letters, digits and '-'", name)
	}
	nw.mu.Lock()
	if _, dup := nw.nodes[name]; dup {
		nw.mu.Unlock()
		t.Fatalf("node %q is on %s already", name, nw.Bridge)
	}
	if nw.next > 254 {
		nw.mu.Unlock()
		t.Fatalf("%s is full", nw.Bridge)
	}
	octet := nw.next
	nw.next++
	node := &NetNode{Name: "kubeup-" + name + "-" + nw.suffix, IP: fmt.Sprintf("%s.%d.%d", netBase, nw.n, octet),
		Net: nw, Veth: fmt.Sprintf("kubeup-%dv%d", nw.n, octet), t: t}
	nw.nodes[name] = node
	nw.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Run(ctx, "ip", "netns", "add", node.Name); err != nil {
		t.Fatal(err)
	}
	unregNs := register(t, record{Kind: kindNetns, Path: node.nsPath()})
	t.Cleanup(func() {
		if msg, err := undoNetns(node.nsPath()); err != nil {
			t.Errorf("%s: %v", msg, err)
			return
		}
		unregNs()
	})
	if _, err := Run(ctx, "ip", "link", "add", node.Veth, "type", "veth", "peer", "name", "eth0", "netns", node.Name); err != nil {
		t.Fatal(err)
	}
	unregVeth := registerLink(t, node.Veth)
	t.Cleanup(func() {
		defer unregVeth()
		if _, err := os.Stat("/sys/class/net/" + node.Veth); err != nil {
			return // gone with the namespace
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := Run(ctx, "ip", "link", "del", node.Veth); err != nil {
			t.Errorf("deleting %s: %v", node.Veth, err)
		}
	})
	for _, args := range [][]string{
		{"ip", "link", "set", node.Veth, "master", nw.Bridge},
		{"ip", "link", "set", node.Veth, "up"},
		{"ip", "-n", node.Name, "link", "set", "lo", "up"},
		{"ip", "-n", node.Name, "addr", "add", node.IP + "/24", "dev", "eth0"},
		{"ip", "-n", node.Name, "link", "set", "eth0", "up"},
		{"ip", "-n", node.Name, "route", "add", "default", "via", nw.Gateway},
	} {
		if _, err := Run(ctx, args[0], args[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	return node
}

func (n *NetNode) nsPath() string { return "/run/netns/" + n.Name }

// Do runs f on a thread in the node's network namespace: the sockets f opens (a listener, a connection) live
// there, and stay there once f returns. The thread comes back to the test's namespace.
func (n *NetNode) Do(t testing.TB, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.GetFromPath(n.nsPath())
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(err) // a locked thread must not go back to the pool in another namespace
		}
	}()
	f()
}

// Command is a command that runs in the node's network namespace through `ip netns exec`: in a mount namespace
// of its own too (a copy of the host's that receives the host's later mounts), where /etc/resolv.conf and
// /etc/hosts are the node's when SetResolver and SetHosts wrote them. Mounts it makes stay in that namespace:
// for a program whose mounts the host must see (protokube), use CommandSharingMounts.
func (n *NetNode) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// CommandSharingMounts is a command that runs in the node's network namespace but in the host's mount
// namespace (nsenter --net): what it mounts, the host and the other nodes see, as the harness's mount checks
// and the static pods started later need. /etc/resolv.conf and /etc/hosts are the host's.
func (n *NetNode) CommandSharingMounts(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.nsPath(), "--", name}, args...)...)
}

// Run runs Command and returns its combined output; a failure names the command and its output.
func (n *NetNode) Run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := n.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("in %s: %s %s: %w: %s", n.Name, name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// MustRun is Run that fails t on error.
func (n *NetNode) MustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := n.Run(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Start starts cmd (made by Command or CommandSharingMounts) in a process group of its own, its output
// appended to logFile, registered for the next run's reap. It is stopped (Stop(5s)) in t.Cleanup.
func (n *NetNode) Start(t testing.TB, cmd *exec.Cmd, logFile string) *Process {
	t.Helper()
	p, err := startProcess(cmd, logFile)
	if err != nil {
		t.Fatalf("in %s: %v", n.Name, err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	return p
}

// SetResolver writes /etc/netns/<Name>/resolv.conf with nameserverIP as the only nameserver: what programs
// started by Command see as /etc/resolv.conf.
func (n *NetNode) SetResolver(nameserverIP string) {
	n.t.Helper()
	n.writeEtc("resolv.conf", "nameserver "+nameserverIP+"\noptions timeout:1 attempts:2\n")
}

// SetHosts writes /etc/netns/<Name>/hosts: what programs started by Command see as /etc/hosts. Start content
// with "127.0.0.1 localhost" unless the node must not resolve it.
func (n *NetNode) SetHosts(content string) {
	n.t.Helper()
	n.writeEtc("hosts", content)
}

// EtcDir is /etc/netns/<Name>, where `ip netns exec` finds the files it bind-mounts over the namespace's /etc.
func (n *NetNode) EtcDir() string { return filepath.Join("/etc/netns", n.Name) }

var (
	etcMu      sync.Mutex
	etcCreated = map[string]bool{} // directories of /etc/netns this process made, and registered
)

func (n *NetNode) writeEtc(file, content string) {
	t := n.t
	t.Helper()
	etcMu.Lock()
	defer etcMu.Unlock()
	dir := n.EtcDir()
	if !etcCreated[dir] {
		if err := os.Mkdir("/etc/netns", 0o755); err == nil {
			unreg := register(t, record{Kind: kindEmptyDir, Path: "/etc/netns"})
			t.Cleanup(func() {
				etcMu.Lock()
				defer etcMu.Unlock()
				os.Remove("/etc/netns") // only when empty: another node's or process's files may be in it
				unreg()
			})
		} else if !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		etcCreated[dir] = true
		unreg := register(t, record{Kind: kindDir, Path: dir})
		t.Cleanup(func() {
			etcMu.Lock()
			defer etcMu.Unlock()
			if err := os.RemoveAll(dir); err != nil {
				t.Errorf("removing %s: %v", dir, err)
				return
			}
			delete(etcCreated, dir)
			unreg()
		})
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Process is a process a test started: in a process group of its own (Stop and Kill signal the group),
// registered for the next run's reap until it has exited. When it exits, what is left of its group is killed.
type Process struct {
	// Cmd is the command; Cmd.Process.Pid its process id.
	Cmd *exec.Cmd
	// Log is the file that holds its stdout and stderr.
	Log string

	done  chan struct{}
	err   error // Wait's, once done is closed
	start uint64
}

// startProcess starts cmd in a process group of its own, its output appended to logFile, and registers it.
func startProcess(cmd *exec.Cmd, logFile string) (*Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	p := &Process{Cmd: cmd, Log: logFile, done: make(chan struct{})}
	unreg := func() {}
	if start, err := processStart(cmd.Process.Pid); err == nil {
		p.start = start
		if u, err := registerErr(record{Kind: kindProcess, PID: cmd.Process.Pid, Start: start, Group: true}); err == nil {
			unreg = u
		} else {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			return nil, fmt.Errorf("e2e registry: %w", err)
		}
	}
	go func() {
		p.err = cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.done)
		unreg()
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Done is closed once the process has exited and was waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited; nil while it runs.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop sends SIGTERM to the process group, waits up to grace, then sends SIGKILL, and waits.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	if grace > 0 {
		syscall.Kill(-p.PID(), syscall.SIGTERM)
		select {
		case <-p.done:
			return p.err
		case <-time.After(grace):
		}
	}
	syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
	return p.err
}

// Kill sends SIGKILL to the process group and waits for the process: a machine that dies.
func (p *Process) Kill() error { return p.Stop(0) }

// registerLink registers the host's network interface name, with its index, for the next run's reap.
func registerLink(t testing.TB, name string) (done func()) {
	t.Helper()
	idx, err := ifindex(name)
	if err != nil {
		t.Fatal(err)
	}
	return register(t, record{Kind: kindLink, Dev: name, Ifindex: idx})
}

func ifindex(name string) (int, error) {
	b, err := os.ReadFile("/sys/class/net/" + name + "/ifindex")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// undoLink deletes the host's interface name if it still has the index idx (a later one of the same name is
// not ours).
func undoLink(name string, idx int) (msg string, err error) {
	if got, err := ifindex(name); err != nil || got != idx {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Run(ctx, "ip", "link", "del", name); err != nil {
		return "deleting the link " + name, err
	}
	return "deleted the link " + name, nil
}

// undoNetns deletes the named network namespace at path (/run/netns/NAME), first killing every process still
// in it, found by the namespace's identity (/proc/PID/ns/net), so that the namespace and its links go with the
// name.
func undoNetns(path string) (msg string, err error) {
	var ns syscall.Stat_t
	if err := syscall.Stat(path, &ns); err != nil {
		return "", nil
	}
	name := filepath.Base(path)
	for deadline := time.Now().Add(20 * time.Second); ; {
		pids := pidsInNetns(ns)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return "deleting the network namespace " + name, fmt.Errorf("processes %v still in it 20s after SIGKILL", pids)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Run(ctx, "ip", "netns", "del", name); err != nil {
		return "deleting the network namespace " + name, err
	}
	return "deleted the network namespace " + name, nil
}

// pidsInNetns returns the live (not zombie) processes whose network namespace is ns.
func pidsInNetns(ns syscall.Stat_t) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
			continue
		}
		if st.Dev == ns.Dev && st.Ino == ns.Ino {
			if start, err := processStart(pid); err == nil && alive(pid, start) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
