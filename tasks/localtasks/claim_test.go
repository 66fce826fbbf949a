package localtasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// fakeLoops is one machine's loop devices, in memory: the Volumes of every node of a test share it, as the
// nodes of one machine share its kernel.
type fakeLoops struct {
	mu       sync.Mutex
	devs     map[string]string // device -> image
	busyDevs map[string]bool   // devices a "mounted filesystem" holds
	next     int
	attaches int
	failNext bool // the next attach fails, as losetup does when no loop device is free
}

func newFakeLoops() *fakeLoops {
	return &fakeLoops{devs: map[string]string{}, busyDevs: map[string]bool{}}
}

func (f *fakeLoops) bound(ctx context.Context, img string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for dev, i := range f.devs {
		if i == img {
			out = append(out, dev)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (f *fakeLoops) attach(ctx context.Context, img string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext {
		f.failNext = false
		return "", errors.New("losetup: cannot find an unused loop device")
	}
	f.attaches++
	dev := fmt.Sprintf("/dev/loop%d", f.next)
	f.next++
	f.devs[dev] = img
	return dev, nil
}

func (f *fakeLoops) detach(ctx context.Context, dev string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busyDevs[dev] {
		return fmt.Errorf("detaching busy %s", dev) // the real losetup would lazily detach: a test must never get here
	}
	delete(f.devs, dev)
	return nil
}

func (f *fakeLoops) busy(dev string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busyDevs[dev], nil
}

func (f *fakeLoops) setBusy(dev string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busyDevs[dev] = busy
}

func (f *fakeLoops) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.devs)
}

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// machine is the nodes of one test: one pool directory, one kernel's loop devices, one clock.
type machine struct {
	dir   string
	loops *fakeLoops
	clock *clock
}

func newMachine(t *testing.T, volumes ...string) *machine {
	t.Helper()
	m := &machine{dir: t.TempDir(), loops: newFakeLoops(), clock: &clock{t: time.Date(2025, 1, 2, 12, 0, 0, 0, time.UTC)}}
	p, err := NewPool(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range volumes {
		mustCreate(t, p, VolumeInfo{Name: name, Zone: "local-a", SizeGB: 1, VolumeType: VolumeTypeSparse,
			Tags: map[string]string{"k8s.io/etcd/main": name}})
	}
	return m
}

// node returns the Volumes of a node, over a Pool of its own: as another process would see the pool.
func (m *machine) node(t *testing.T, id string, lease time.Duration) *Volumes {
	t.Helper()
	p, err := NewPool(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVolumes(p, volumetasks.Holder{NodeID: id, InternalIP: "10.0.0." + id[len(id)-1:]}, lease)
	v.now, v.loops = m.clock.now, m.loops
	return v
}

func (m *machine) img(name string) string { return filepath.Join(m.dir, name+".img") }

func mustAttach(t *testing.T, v *Volumes, id string) string {
	t.Helper()
	dev, err := v.Attach(context.Background(), id)
	if err != nil {
		t.Fatalf("node %s attaching %s: %v", v.node.NodeID, id, err)
	}
	if dev == "" {
		t.Fatalf("node %s attaching %s: no device", v.node.NodeID, id)
	}
	return dev
}

// wantHeld checks that err says volume id is held by node holder, and is terminal.
func wantHeld(t *testing.T, err error, id, holder string) {
	t.Helper()
	var he *volumetasks.HeldError
	switch {
	case !errors.Is(err, volumetasks.ErrHeld) || !errors.As(err, &he):
		t.Fatalf("error %v, want one that matches ErrHeld", err)
	case he.VolumeID != id || he.Holder.NodeID != holder:
		t.Errorf("error %v: volume %s held by %s, want %s held by %s", err, he.VolumeID, he.Holder.NodeID, id, holder)
	case engine.ClassOf(err) != engine.ClassTerminal:
		t.Errorf("error %v is %s, want terminal", err, engine.ClassOf(err))
	}
	if err != nil && !strings.Contains(err.Error(), id+".claim") {
		t.Errorf("error %q does not name the claim file, the way out", err)
	}
}

func attached(t *testing.T, v *Volumes, id string) string {
	t.Helper()
	dev, err := v.Attached(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func TestVolumesAttachDetach(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "a.etcd-main", "b.etcd-main")
	a, b := m.node(t, "node-a", time.Minute), m.node(t, "node-b", time.Minute)

	if got := attached(t, a, "a.etcd-main"); got != "" {
		t.Fatalf("attached before Attach: %q", got)
	}
	dev := mustAttach(t, a, "a.etcd-main")
	if got := attached(t, a, "a.etcd-main"); got != dev {
		t.Errorf("Attached = %q, want %q", got, dev)
	}
	if again := mustAttach(t, a, "a.etcd-main"); again != dev || m.loops.attaches != 1 {
		t.Errorf("a second Attach gave %s after %d losetups, want %s after 1", again, m.loops.attaches, dev)
	}

	// Another node is refused, sees nothing attached, and its Detach leaves node-a's claim alone.
	_, err := b.Attach(ctx, "a.etcd-main")
	wantHeld(t, err, "a.etcd-main", "node-a")
	if got := attached(t, b, "a.etcd-main"); got != "" {
		t.Errorf("node-b sees node-a's volume attached at %q", got)
	}
	if err := b.Detach(ctx, "a.etcd-main"); err != nil {
		t.Fatal(err)
	}
	if got := attached(t, a, "a.etcd-main"); got != dev {
		t.Errorf("node-b's Detach took node-a's volume: Attached = %q", got)
	}

	vols, err := b.List(ctx, map[string]string{"k8s.io/etcd/main": ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []volumetasks.Volume{
		{ID: "a.etcd-main", Zone: "local-a", Tags: map[string]string{"k8s.io/etcd/main": "a.etcd-main"},
			Holder: &volumetasks.Holder{NodeID: "node-a", InternalIP: "10.0.0.a"}},
		{ID: "b.etcd-main", Zone: "local-a", Tags: map[string]string{"k8s.io/etcd/main": "b.etcd-main"}},
	}
	if diff := cmp.Diff(want, vols); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	// A mounted device is not detached, and the claim stays.
	m.loops.setBusy(dev, true)
	if err := a.Detach(ctx, "a.etcd-main"); err == nil || !strings.Contains(err.Error(), "in use") ||
		!strings.Contains(err.Error(), "findmnt --source "+dev) {
		t.Errorf("Detach of a mounted volume: %v, want a refusal that says how to find the mount", err)
	}
	if got := attached(t, a, "a.etcd-main"); got != dev {
		t.Errorf("after a refused Detach, Attached = %q, want %q", got, dev)
	}
	m.loops.setBusy(dev, false)

	if err := a.Detach(ctx, "a.etcd-main"); err != nil {
		t.Fatal(err)
	}
	if m.loops.count() != 0 {
		t.Errorf("%d loop devices left after Detach", m.loops.count())
	}
	if _, err := os.Stat(filepath.Join(m.dir, "a.etcd-main.claim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the claim is left after Detach: %v", err)
	}
	if err := a.Detach(ctx, "a.etcd-main"); err != nil {
		t.Errorf("Detach of a detached volume: %v", err)
	}
	mustAttach(t, b, "a.etcd-main") // released: free for the next node
}

func TestVolumesLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "v")
	a, b := m.node(t, "node-a", time.Minute), m.node(t, "node-b", 2*time.Minute)
	devA := mustAttach(t, a, "v")

	m.clock.add(50 * time.Second)
	if err := a.Renew(ctx, []string{"v"}); err != nil {
		t.Fatal(err)
	}
	m.clock.add(60 * time.Second) // 10s inside the renewed lease
	_, err := b.Attach(ctx, "v")
	wantHeld(t, err, "v", "node-a")
	if err != nil && !strings.Contains(err.Error(), "lease expires at 2025-01-02T12:01:50Z") {
		t.Errorf("error %q does not say when the lease expires", err)
	}

	m.clock.add(11 * time.Second) // node-a's lease ran out a second ago: node-a is gone
	if got := attached(t, a, "v"); got != "" {
		t.Errorf("node-a's expired claim still reads as attached at %q", got)
	}
	vols, err := b.List(ctx, nil)
	if err != nil || len(vols) != 1 || vols[0].Holder != nil {
		t.Errorf("node-b lists %+v, %v; want v free", vols, err)
	}
	if vols, _ := a.List(ctx, nil); len(vols) != 1 || vols[0].Holder == nil || vols[0].Holder.NodeID != "node-a" {
		t.Errorf("node-a lists %+v; want v still node-a's (nobody took it over)", vols)
	}
	devB := mustAttach(t, b, "v")
	if bound, _ := m.loops.bound(ctx, m.img("v")); !cmp.Equal(bound, []string{devB}) || devB == devA {
		t.Errorf("after the takeover the image is bound to %v, want only node-b's new device (node-a had %s)", bound, devA)
	}

	// node-a is back: it has lost the volume, and is told so.
	if got := attached(t, a, "v"); got != "" {
		t.Errorf("node-a sees v attached at %q after node-b took it over", got)
	}
	_, err = a.Attach(ctx, "v")
	wantHeld(t, err, "v", "node-b")
	err = a.Renew(ctx, []string{"v"})
	wantHeld(t, err, "v", "node-b")
	if vols, _ := a.List(ctx, nil); len(vols) != 1 || vols[0].Holder == nil || vols[0].Holder.NodeID != "node-b" {
		t.Errorf("node-a lists %+v; want v held by node-b", vols)
	}

	// node-b's own lease is two minutes, whatever node-a's was.
	m.clock.add(119 * time.Second)
	_, err = a.Attach(ctx, "v")
	wantHeld(t, err, "v", "node-b")
}

// A node's own expired claim, not taken over, is renewed by its next Attach, on the same device.
func TestVolumesOwnExpiredClaim(t *testing.T) {
	m := newMachine(t, "v")
	a := m.node(t, "node-a", time.Minute)
	dev := mustAttach(t, a, "v")
	m.clock.add(time.Hour)
	if got := attached(t, a, "v"); got != "" {
		t.Errorf("Attached = %q with the lease expired, want \"\" (so that the round renews it)", got)
	}
	if again := mustAttach(t, a, "v"); again != dev || m.loops.attaches != 1 {
		t.Errorf("Attach gave %s after %d losetups, want %s after 1", again, m.loops.attaches, dev)
	}
	if got := attached(t, a, "v"); got != dev {
		t.Errorf("Attached = %q after the renewal, want %q", got, dev)
	}
}

// A claim whose lease expired is not taken over while its device is in use (the previous holder still has it
// mounted): nothing is claimed, nothing unbound.
func TestVolumesTakeoverRefusesDeviceInUse(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "v")
	a, b := m.node(t, "node-a", time.Minute), m.node(t, "node-b", time.Minute)
	dev := mustAttach(t, a, "v")
	m.loops.setBusy(dev, true)
	m.clock.add(time.Hour)
	_, err := b.Attach(ctx, "v")
	if err == nil || engine.ClassOf(err) != engine.ClassTerminal ||
		!strings.Contains(err.Error(), "claiming volume v: it is attached as "+dev+" (claimed by node node-a) and in use") {
		t.Fatalf("takeover of a mounted volume: %v, want a terminal refusal naming the device and node-a", err)
	}
	c, err := b.pool.readClaim("v")
	if err != nil || c == nil || c.NodeID != "node-a" {
		t.Errorf("claim after the refusal: %+v, %v; want node-a's, untouched", c, err)
	}
	if bound, _ := m.loops.bound(ctx, m.img("v")); !cmp.Equal(bound, []string{dev}) {
		t.Errorf("bound after the refusal: %v, want [%s]", bound, dev)
	}
	m.loops.setBusy(dev, false) // unmounted: now it can move
	if got := mustAttach(t, b, "v"); got == dev {
		t.Errorf("node-b took over node-a's device %s instead of attaching its own", got)
	}
}

// Release is what a cloud does when an instance dies: any node's claim ends, its device is unbound.
func TestVolumesRelease(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "v")
	a, b := m.node(t, "node-a", 0), m.node(t, "node-b", 0) // claims without a lease: only a release frees them
	dev := mustAttach(t, a, "v")
	m.clock.add(1000 * time.Hour)
	_, err := b.Attach(ctx, "v")
	wantHeld(t, err, "v", "node-a")

	m.loops.setBusy(dev, true)
	if err := b.Release(ctx, "v"); err == nil || !strings.Contains(err.Error(), "releasing volume v: it is attached as "+dev) {
		t.Errorf("Release of a mounted volume: %v, want a refusal", err)
	}
	m.loops.setBusy(dev, false)
	if err := b.Release(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if m.loops.count() != 0 {
		t.Errorf("%d loop devices left after Release", m.loops.count())
	}
	if err := b.Release(ctx, "v"); err != nil {
		t.Errorf("Release of a free volume: %v", err)
	}
	mustAttach(t, b, "v")
	if err := a.Renew(ctx, []string{"v"}); !errors.Is(err, volumetasks.ErrHeld) {
		t.Errorf("node-a renewing a released, retaken volume: %v, want ErrHeld", err)
	}
}

func TestVolumesRenew(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "v", "w")
	a := m.node(t, "node-a", time.Minute)
	mustAttach(t, a, "v")
	err := a.Renew(ctx, []string{"v", "w"})
	if err == nil || !strings.Contains(err.Error(), "renewing the claim of volume w: node node-a holds it no longer") {
		t.Errorf("Renew of an unclaimed volume: %v", err)
	}
	if c, _ := a.pool.readClaim("w"); c != nil {
		t.Errorf("Renew claimed w: %+v", c)
	}
	m.clock.add(30 * time.Second)
	if err := a.Renew(ctx, []string{"v"}); err != nil {
		t.Fatal(err)
	}
	c, err := a.pool.readClaim("v")
	if err != nil || !c.Renewed.Equal(m.clock.now()) || c.Since.Equal(c.Renewed) {
		t.Errorf("claim after Renew: %+v, %v; want renewed now, claimed 30s ago", c, err)
	}
}

func TestVolumesRefusals(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "v")
	a := m.node(t, "node-a", time.Minute)
	tests := []struct {
		name    string
		do      func() error
		wantErr string
	}{
		{name: "missing volume", do: func() error { _, err := a.Attach(ctx, "nope"); return err },
			wantErr: "volume nope is not in the pool " + m.dir},
		{name: "bad name", do: func() error { _, err := a.Attach(ctx, "../v"); return err },
			wantErr: `volume name "../v" contains ".."`},
		{name: "no node id", do: func() error {
			_, err := NewVolumes(a.pool, volumetasks.Holder{}, time.Minute).Attach(ctx, "v")
			return err
		}, wantErr: "this node has no id"},
		{name: "losetup fails", do: func() error {
			m.loops.failNext = true
			_, err := a.Attach(ctx, "v")
			return err
		}, wantErr: "attaching volume v: losetup: cannot find an unused loop device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, tt.name, tt.do(), tt.wantErr)
		})
	}
	// The failed attach left no claim behind: the volume is free for any node.
	if c, err := a.pool.readClaim("v"); c != nil || err != nil {
		t.Errorf("claim after a failed attach: %+v, %v", c, err)
	}
}

// A claim file that is not one is an error that names it, never a free volume.
func TestVolumesCorruptClaim(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "v")
	a := m.node(t, "node-a", time.Minute)
	path := filepath.Join(m.dir, "v.claim")
	for _, content := range []string{"{", `{"nodeID": ""}`, `{"nodeID": "x", "lease": "soon"}`} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := a.Attach(ctx, "v")
		checkErr(t, "Attach", err, path)
		checkErr(t, "Attach", err, "once you are sure no node uses volume v")
		_, err = a.List(ctx, nil)
		checkErr(t, "List", err, path)
	}
}

// A node that crashed between its claim and its losetup finds its claim without a device: Attached says "not
// attached", and the next Attach completes it.
func TestVolumesClaimWithoutDevice(t *testing.T) {
	m := newMachine(t, "v")
	a := m.node(t, "node-a", time.Minute)
	now := m.clock.now()
	if err := a.pool.writeClaim("v", &claimRecord{NodeID: "node-a", Since: now, Renewed: now, Lease: "1m0s"}); err != nil {
		t.Fatal(err)
	}
	if got := attached(t, a, "v"); got != "" {
		t.Errorf("Attached = %q, want \"\"", got)
	}
	dev := mustAttach(t, a, "v")
	if c, _ := a.pool.readClaim("v"); c.Device != dev {
		t.Errorf("claim records device %q, want %q", c.Device, dev)
	}
}

// A killed writer's temporary claim file is removed by the next writer.
func TestVolumesCleanClaimTemps(t *testing.T) {
	m := newMachine(t, "v")
	stale := filepath.Join(m.dir, ".v.claim.tmp-123")
	if err := os.WriteFile(stale, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustAttach(t, m.node(t, "node-a", time.Minute), "v")
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary claim file left: %v", err)
	}
	for name, want := range map[string]bool{".v.claim.tmp-1": true, ".v.claim.tmp-": false, ".v.json.tmp-1": false, "..claim.tmp-1": false} {
		if isClaimTemp(name) != want {
			t.Errorf("isClaimTemp(%q) = %v, want %v", name, !want, want)
		}
	}
}

// Never two claims of one volume: many nodes, each with a Pool and Volumes of its own (as processes have), race
// for one volume, free or with an expired claim; exactly one wins, the others are told who did.
func TestVolumesNeverTwoClaims(t *testing.T) {
	ctx := context.Background()
	const nodes = 24
	for round, setup := range []string{"free", "expired claim of a dead node", "released"} {
		t.Run(setup, func(t *testing.T) {
			m := newMachine(t, "v")
			switch round {
			case 1:
				mustAttach(t, m.node(t, "dead-1", time.Minute), "v")
				m.clock.add(time.Hour)
			case 2:
				mustAttach(t, m.node(t, "dead-2", 0), "v")
				if err := m.node(t, "admin", 0).Release(ctx, "v"); err != nil {
					t.Fatal(err)
				}
			}
			vols := make([]*Volumes, nodes)
			for i := range vols {
				vols[i] = m.node(t, fmt.Sprintf("node-%02d", i), time.Minute)
			}
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				winners []string
				start   = make(chan struct{})
			)
			for _, v := range vols {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := v.Attach(ctx, "v")
					switch {
					case err == nil:
						mu.Lock()
						winners = append(winners, v.node.NodeID)
						mu.Unlock()
					case !errors.Is(err, volumetasks.ErrHeld):
						t.Errorf("node %s: %v, want success or ErrHeld", v.node.NodeID, err)
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(winners) != 1 {
				t.Fatalf("%d nodes claimed the volume (%v), want exactly 1", len(winners), winners)
			}
			holders := 0
			for _, v := range vols {
				if attached(t, v, "v") != "" {
					holders++
				}
			}
			if bound, _ := m.loops.bound(ctx, m.img("v")); holders != 1 || len(bound) != 1 {
				t.Errorf("%d nodes see the volume attached, %d loop devices bound; want 1 and 1", holders, len(bound))
			}
		})
	}
}

// claimHelperEnv makes the test binary a process that attaches one volume as one node (see
// TestVolumesNeverTwoClaimsAcrossProcesses): "DIR NODE".
const claimHelperEnv = "KUBEUP_TEST_CLAIM"

// TestClaimHelperProcess is the body of the processes of TestVolumesNeverTwoClaimsAcrossProcesses; run by
// itself, it does nothing.
func TestClaimHelperProcess(t *testing.T) {
	arg := os.Getenv(claimHelperEnv)
	if arg == "" {
		return
	}
	dir, node, _ := strings.Cut(arg, " ")
	p, err := NewPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVolumes(p, volumetasks.Holder{NodeID: node}, time.Minute)
	v.loops = newFakeLoops()                   // each process has its own: what is tested is the claim
	bufio.NewReader(os.Stdin).ReadString('\n') // the start signal
	_, err = v.Attach(context.Background(), "v")
	switch {
	case err == nil:
		fmt.Println("claimed")
	case errors.Is(err, volumetasks.ErrHeld):
		fmt.Println("held")
	default:
		fmt.Println("error:", err)
	}
}

// Never two claims of one volume, among processes: only the flock on the pool directory serialises them.
func TestVolumesNeverTwoClaimsAcrossProcesses(t *testing.T) {
	const procs = 8
	m := newMachine(t, "v")
	type proc struct {
		cmd      *exec.Cmd
		out, log strings.Builder
		in       io.WriteCloser
	}
	ps := make([]*proc, procs)
	for i := range ps {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^TestClaimHelperProcess$")}
		p.cmd.Env = append(os.Environ(), claimHelperEnv+"="+m.dir+" node-"+strconv.Itoa(i))
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.log
		stdin, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.in = stdin
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	for _, p := range ps {
		io.WriteString(p.in, "go\n") // as close together as they can be
	}
	claimed := 0
	for i, p := range ps {
		p.in.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("process %d: %v: %s%s", i, err, p.out.String(), p.log.String())
			continue
		}
		switch out := p.out.String(); {
		case strings.HasPrefix(out, "claimed"):
			claimed++
		case strings.HasPrefix(out, "held"):
		default:
			t.Errorf("process %d: %s%s", i, out, p.log.String())
		}
	}
	if claimed != 1 {
		t.Errorf("%d processes claimed the volume, want exactly 1", claimed)
	}
}

// The Attach task of volumetasks, converged on the local provider: apply, then no changes; another node's task
// fails, naming the holder.
type volumesWorld struct{ v *Volumes }

func (w volumesWorld) VolumeProvider() volumetasks.Provider { return w.v }

func TestVolumesAttachTask(t *testing.T) {
	ctx := context.Background()
	m := newMachine(t, "a.etcd-main")
	build := func() *engine.Graph[volumesWorld] {
		g := engine.NewGraph[volumesWorld]()
		engine.Add(g, &volumetasks.Attach[volumesWorld]{VolumeID: "a.etcd-main"})
		return g
	}
	enginetest.ApplyThenNoChanges(t, ctx, volumesWorld{m.node(t, "node-a", time.Minute)}, build)
	_, err := engine.Run(ctx, build(), volumesWorld{m.node(t, "node-b", time.Minute)}, engine.Options{Target: engine.Apply})
	wantHeld(t, err, "a.etcd-main", "node-a")
	if err != nil && !strings.Contains(err.Error(), "VolumeAttach/a.etcd-main: rendering: attaching volume a.etcd-main to node node-b: volume a.etcd-main is held by node node-a (10.0.0.a)") {
		t.Errorf("error %q", err)
	}
}
