package gcetasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/api/compute/v1"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

const multiDisk = "a-etcd-main-gce-example-com"

// multiFixture is the cluster of clusterGraph with n instances in zone a, and each as a claim names it.
func multiFixture(t *testing.T, n int64) (*Cloud, *fakegce.Server, []volumetasks.Holder) {
	t.Helper()
	c, srv := newTestCloud(t)
	ctx := context.Background()
	s := defaultSpec()
	s.size = n
	mustRun(t, c, engine.Apply, clusterGraph(s))
	var hs []volumetasks.Holder
	err := c.Compute.Instances.List(testProject, zones[0]).Pages(ctx, func(l *compute.InstanceList) error {
		for _, i := range l.Items {
			h := volumetasks.Holder{NodeID: i.Name, InternalIP: i.NetworkInterfaces[0].NetworkIP}
			if acs := i.NetworkInterfaces[0].AccessConfigs; len(acs) > 0 {
				h.ExternalIP = acs[0].NatIP
			}
			hs = append(hs, h)
		}
		return nil
	})
	if err != nil || int64(len(hs)) != n {
		t.Fatalf("instances of zone a: %v, %v", hs, err)
	}
	return c, srv, hs
}

// disksWithDevice returns the Disks of instance me over svc, with the device of multiDisk on its machine.
func disksWithDevice(t *testing.T, svc *compute.Service, me volumetasks.Holder) *Disks {
	t.Helper()
	d := NewDisks(svc, testProject, zones[0], me, DisksOptions{Root: t.TempDir()})
	dev := d.devicePath(multiDisk)
	if err := os.MkdirAll(filepath.Dir(dev), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// attachReadOnly attaches multiDisk to instance name read-only: the fake's way of giving a disk several users.
func attachReadOnly(t *testing.T, c *Cloud, name string) {
	t.Helper()
	ctx := context.Background()
	disk, err := c.Compute.Disks.Get(testProject, zones[0], multiDisk).Do()
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Compute.Instances.AttachDisk(testProject, zones[0], name, &compute.AttachedDisk{Source: disk.SelfLink, DeviceName: multiDisk, Mode: "READ_ONLY", Type: "PERSISTENT"}).Do()
	if err == nil {
		err = waitOperation(ctx, c.Compute, testProject, "attaching read-only", op)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// wantMultiHeld checks that err is a terminal HeldError of multiDisk whose holder is holder (with its address),
// and that its message names every instance of names.
func wantMultiHeld(t *testing.T, what string, err error, holder volumetasks.Holder, names ...string) {
	t.Helper()
	var held *volumetasks.HeldError
	if !errors.As(err, &held) || !errors.Is(err, volumetasks.ErrHeld) || engine.ClassOf(err) != engine.ClassTerminal {
		t.Fatalf("%s = %v, want a terminal HeldError", what, err)
	}
	if held.VolumeID != multiDisk || held.Holder != holder {
		t.Errorf("%s: disk %s held by %+v, want %s held by %+v", what, held.VolumeID, held.Holder, multiDisk, holder)
	}
	for _, want := range append([]string{multiDisk, "more than one instance", "gcloud compute instances detach-disk", holder.InternalIP}, names...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to name %q", what, err, want)
		}
	}
}

// wantContested checks that err is a ContestedError of multiDisk used by me and loser, which winner keeps: not
// ready when me won (it waits for the others to detach theirs), terminal and matching ErrHeld when me lost.
func wantContested(t *testing.T, what string, err error, me, winner, loser volumetasks.Holder) {
	t.Helper()
	var c *volumetasks.ContestedError
	if !errors.As(err, &c) {
		t.Fatalf("%s = %v, want a ContestedError", what, err)
	}
	won := winner == me
	class := engine.ClassTerminal
	if won {
		class = engine.ClassNotReady
	}
	if c.VolumeID != multiDisk || c.Winner != winner || len(c.Losers) != 1 || c.Losers[0] != loser || c.Won() != won {
		t.Errorf("%s: %+v, want disk %s won by %+v, lost by %+v", what, c, multiDisk, winner, loser)
	}
	if engine.ClassOf(err) != class || errors.Is(err, volumetasks.ErrHeld) == won {
		t.Errorf("%s: class %v, matches ErrHeld %v; want %v, %v", what, engine.ClassOf(err), errors.Is(err, volumetasks.ErrHeld), class, !won)
	}
	for _, want := range []string{multiDisk, winner.NodeID + " keeps it", "lowest name", winner.InternalIP,
		"gcloud compute instances detach-disk INSTANCE --disk " + multiDisk, "for INSTANCE in " + loser.NodeID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to name %q", what, err, want)
		}
	}
}

// ranks returns the winner and the loser of a disk used by a and b: the lowest instance name wins.
func ranks(a, b volumetasks.Holder) (winner, loser volumetasks.Holder) {
	if a.NodeID < b.NodeID {
		return a, b
	}
	return b, a
}

// TestDisksMultiAttachRanking: a disk whose users are this instance and another (both attached it at once: a
// multi-writer disk, or read-only) was refused for ever on both, until a person detached it from one. The user
// with the lowest instance name wins it now, on both instances and whatever the order of the users: List names
// the winner as the holder and the loser as AlsoAttached; Attached and Attach refuse the disk on both (nothing
// formats or mounts it), not ready on the winner (it waits), terminal on the loser, without attachDisk; Lost
// names the loser's attachment and its device, on the loser only.
func TestDisksMultiAttachRanking(t *testing.T) {
	ctx := context.Background()
	filter := map[string]string{"kubernetes.io/cluster/" + testCluster: "owned"}
	for _, otherFirst := range []bool{false, true} {
		c, srv, hs := multiFixture(t, 2)
		if otherFirst {
			attachReadOnly(t, c, hs[1].NodeID)
			attachReadOnly(t, c, hs[0].NodeID)
		} else {
			attachReadOnly(t, c, hs[0].NodeID)
			attachReadOnly(t, c, hs[1].NodeID)
		}
		winner, loser := ranks(hs[0], hs[1])
		for _, me := range hs {
			what := func(s string) string {
				return fmt.Sprintf("%s on %s, users in reverse order %v", s, me.NodeID, otherFirst)
			}
			d := disksWithDevice(t, c.Compute, me)
			vols, err := d.List(ctx, filter)
			if err != nil || len(vols) == 0 || vols[0].ID != multiDisk || vols[0].Holder == nil || *vols[0].Holder != winner ||
				len(vols[0].AlsoAttached) != 1 || vols[0].AlsoAttached[0] != loser {
				t.Fatalf("%s = %+v, %v; want %s held by %s, also attached to %s", what("List"), vols, err, multiDisk, winner.NodeID, loser.NodeID)
			}
			dev, err := d.Attached(ctx, multiDisk)
			if dev != "" {
				t.Errorf("%s named device %q of a disk attached elsewhere too", what("Attached"), dev)
			}
			wantContested(t, what("Attached"), err, me, winner, loser)
			srv.ResetCalls()
			dev, err = d.Attach(ctx, multiDisk)
			if dev != "" {
				t.Errorf("%s named device %q", what("Attach"), dev)
			}
			wantContested(t, what("Attach"), err, me, winner, loser)
			if n := srv.Calls()["compute.instances.attachDisk"]; n != 0 {
				t.Errorf("%s called attachDisk %d times", what("Attach"), n)
			}
			loss, err := d.Lost(ctx, multiDisk)
			switch {
			case err != nil:
				t.Errorf("%s: %v", what("Lost"), err)
			case me == winner && loss != nil:
				t.Errorf("%s = %+v on the winner, want nil", what("Lost"), loss)
			case me == loser && (loss == nil || loss.Winner != winner || loss.VolumeID != multiDisk ||
				!slices.Equal(loss.Devices, []string{d.devicePath(multiDisk)}) || loss.Use.InUse()):
				t.Errorf("%s = %+v on the loser, want won by %s, its device, not in use", what("Lost"), loss, winner.NodeID)
			}
		}
	}
}

// TestDisksDetachLost: the loser detaches its own attachment (one detachDisk), and the disk is then the winner's
// alone; the winner detaches nothing.
func TestDisksDetachLost(t *testing.T) {
	ctx := context.Background()
	c, srv, hs := multiFixture(t, 2)
	attachReadOnly(t, c, hs[0].NodeID)
	attachReadOnly(t, c, hs[1].NodeID)
	winner, loser := ranks(hs[0], hs[1])

	srv.ResetCalls()
	if err := disksWithDevice(t, c.Compute, winner).DetachLost(ctx, multiDisk); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls()["compute.instances.detachDisk"]; n != 0 {
		t.Errorf("DetachLost on the winner called detachDisk %d times", n)
	}
	d := disksWithDevice(t, c.Compute, loser)
	if err := d.DetachLost(ctx, multiDisk); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls()["compute.instances.detachDisk"]; n != 1 {
		t.Errorf("DetachLost on the loser called detachDisk %d times, want 1", n)
	}
	disk, err := c.Compute.Disks.Get(testProject, zones[0], multiDisk).Do()
	if err != nil || len(disk.Users) != 1 || lastSegment(disk.Users[0]) != winner.NodeID {
		t.Errorf("after DetachLost the disk's users are %v, %v; want the winner's only", disk.Users, err)
	}
	if loss, err := d.Lost(ctx, multiDisk); loss != nil || err != nil {
		t.Errorf("after DetachLost, Lost = %+v, %v; want nil", loss, err)
	}
	if dev, err := disksWithDevice(t, c.Compute, winner).Attached(ctx, multiDisk); err != nil || dev == "" {
		t.Errorf("after DetachLost, the winner's Attached = %q, %v; want its device", dev, err)
	}
}

// TestDisksDetachLostRefusesInUse: the loser's attachment is not detached while its device is mounted on this
// machine (by its by-id link or what that resolves to): a terminal error names the mount point and what a
// person does; nothing is detached.
func TestDisksDetachLostRefusesInUse(t *testing.T) {
	ctx := context.Background()
	c, srv, hs := multiFixture(t, 2)
	attachReadOnly(t, c, hs[0].NodeID)
	attachReadOnly(t, c, hs[1].NodeID)
	winner, loser := ranks(hs[0], hs[1])
	d := disksWithDevice(t, c.Compute, loser)
	d.mountTable = filepath.Join(t.TempDir(), "mountinfo")
	mp := filepath.Join(d.root, "mnt", "master-"+multiDisk)
	table := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"95 22 8:16 / " + mp + " rw,relatime shared:50 - ext4 " + d.devicePath(multiDisk) + " rw\n"
	if err := os.WriteFile(d.mountTable, []byte(table), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	err := d.DetachLost(ctx, multiDisk)
	if err == nil || engine.ClassOf(err) != engine.ClassTerminal {
		t.Fatalf("DetachLost of a mounted device = %v, want a terminal error", err)
	}
	for _, want := range []string{multiDisk, "mounted at " + mp, "umount " + mp, "node " + winner.NodeID, "nothing is detached",
		"gcloud compute instances detach-disk " + loser.NodeID + " --disk " + multiDisk} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("DetachLost: %v\nwant it to say %q", err, want)
		}
	}
	if n := srv.Calls()["compute.instances.detachDisk"]; n != 0 {
		t.Errorf("DetachLost called detachDisk %d times", n)
	}
	if disk, err := c.Compute.Disks.Get(testProject, zones[0], multiDisk).Do(); err != nil || len(disk.Users) != 2 {
		t.Errorf("the disk's users are %v, %v; want both still", disk.Users, err)
	}
}

// TestDisksAttachedElsewhereTwice: a disk whose users are two other instances is held, the error names both, and
// it is never attached here.
func TestDisksAttachedElsewhereTwice(t *testing.T) {
	ctx := context.Background()
	c, srv, hs := multiFixture(t, 3)
	me, o1, o2 := hs[0], hs[1], hs[2]
	attachReadOnly(t, c, o1.NodeID)
	attachReadOnly(t, c, o2.NodeID)
	d := disksWithDevice(t, c.Compute, me)

	holder, _ := ranks(o1, o2)
	srv.ResetCalls()
	_, err := d.Attach(ctx, multiDisk)
	wantMultiHeld(t, "Attach", err, holder, o1.NodeID, o2.NodeID, "2 instances")
	if strings.Contains(err.Error(), me.NodeID) {
		t.Errorf("Attach: %v names this instance, which does not use the disk", err)
	}
	if n := srv.Calls()["compute.instances.attachDisk"]; n != 0 {
		t.Errorf("Attach called attachDisk %d times", n)
	}
	if dev, err := d.Attached(ctx, multiDisk); dev != "" || err != nil {
		t.Errorf("Attached = %q, %v; want not attached here", dev, err)
	}
}

// TestDisksMultiWriterRace: another instance attaches a multi-writer disk at the same time as this one (both saw
// it free, and GCE let both attach): the read after this instance's attachDisk shows the other user, and Attach
// refuses the disk instead of handing its device on to be formatted and mounted: terminal when the other won it
// (the lower name), not ready when this instance won it, and then Attached gives the device once the other's
// attachment is gone. The fake has no multi-writer disks: a proxy adds the other instance to the users of every
// read of the disk once it has users, until the other detached.
func TestDisksMultiWriterRace(t *testing.T) {
	ctx := context.Background()
	for _, first := range []int{0, 1} {
		c, srv, hs := multiFixture(t, 2)
		me, other := hs[first], hs[1-first]
		winner, loser := ranks(me, other)
		otherInst, err := c.Compute.Instances.Get(testProject, zones[0], other.NodeID).Do()
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		otherAttached := true
		front := httptest.NewServer(srv)
		t.Cleanup(front.Close)
		target, _ := url.Parse(front.URL)
		proxy := httputil.NewSingleHostReverseProxy(target)
		racing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/disks/"+multiDisk) {
				proxy.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, r)
			var disk map[string]any
			body := rec.Body.Bytes()
			mu.Lock()
			add := otherAttached
			mu.Unlock()
			if rec.Code == http.StatusOK && json.Unmarshal(body, &disk) == nil && add {
				if users, _ := disk["users"].([]any); len(users) > 0 {
					disk["users"] = append(users, otherInst.SelfLink)
					body, _ = json.Marshal(disk)
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Code)
			w.Write(bytes.Clone(body))
		}))
		t.Cleanup(racing.Close)
		svc, _, err := servicesAt(ctx, racing.URL+"/")
		if err != nil {
			t.Fatal(err)
		}
		d := disksWithDevice(t, svc, me)

		dev, err := d.Attach(ctx, multiDisk)
		if dev != "" {
			t.Errorf("Attach named device %q of a disk another instance attached too", dev)
		}
		wantContested(t, "Attach", err, me, winner, loser)
		if n := srv.Calls()["compute.instances.attachDisk"]; n != 1 {
			t.Errorf("attachDisk called %d times, want 1 (the disk was free when Attach looked)", n)
		}
		dev, err = d.Attached(ctx, multiDisk)
		if dev != "" {
			t.Errorf("Attached named device %q", dev)
		}
		wantContested(t, "Attached", err, me, winner, loser)
		if winner != me {
			continue
		}
		mu.Lock()
		otherAttached = false // the loser detached its attachment
		mu.Unlock()
		if dev, err := d.Attached(ctx, multiDisk); dev != d.devicePath(multiDisk) || err != nil {
			t.Errorf("the winner, once the loser detached: Attached = %q, %v; want its device", dev, err)
		}
	}
}
