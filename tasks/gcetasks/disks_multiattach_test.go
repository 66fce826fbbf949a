package gcetasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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

// TestDisksAttachedHereAndElsewhere: a disk whose users are this instance and another (in either order) passed
// as this instance's, since Attached only checked that this instance was among them, and protokube formatted and
// mounted it. Attached now refuses it naming the other user; Attach refuses it without attachDisk; List reports
// this instance as the holder (so that its task finds the disk and refuses it); Detach detaches this instance's
// attachment only.
func TestDisksAttachedHereAndElsewhere(t *testing.T) {
	ctx := context.Background()
	filter := map[string]string{"kubernetes.io/cluster/" + testCluster: "owned"}
	for _, otherFirst := range []bool{false, true} {
		c, srv, hs := multiFixture(t, 2)
		me, other := hs[0], hs[1]
		if otherFirst {
			attachReadOnly(t, c, other.NodeID)
			attachReadOnly(t, c, me.NodeID)
		} else {
			attachReadOnly(t, c, me.NodeID)
			attachReadOnly(t, c, other.NodeID)
		}
		d := disksWithDevice(t, c.Compute, me)

		dev, err := d.Attached(ctx, multiDisk)
		if dev != "" {
			t.Errorf("other first %v: Attached named device %q of a disk attached elsewhere too", otherFirst, dev)
		}
		wantMultiHeld(t, "Attached", err, other, other.NodeID, me.NodeID+" (this instance)", "2 instances")

		srv.ResetCalls()
		dev, err = d.Attach(ctx, multiDisk)
		if dev != "" {
			t.Errorf("other first %v: Attach named device %q", otherFirst, dev)
		}
		wantMultiHeld(t, "Attach", err, other, other.NodeID, me.NodeID)
		if n := srv.Calls()["compute.instances.attachDisk"]; n != 0 {
			t.Errorf("other first %v: Attach called attachDisk %d times", otherFirst, n)
		}

		vols, err := d.List(ctx, filter)
		if err != nil || len(vols) == 0 || vols[0].ID != multiDisk || vols[0].Holder == nil || *vols[0].Holder != me {
			t.Fatalf("other first %v: List = %+v, %v; want %s held by this instance", otherFirst, vols, err, multiDisk)
		}

		if err := d.Detach(ctx, multiDisk); err != nil {
			t.Fatal(err)
		}
		disk, err := c.Compute.Disks.Get(testProject, zones[0], multiDisk).Do()
		if err != nil || len(disk.Users) != 1 || lastSegment(disk.Users[0]) != other.NodeID {
			t.Errorf("other first %v: after Detach the disk's users are %v, %v; want the other instance's only", otherFirst, disk.Users, err)
		}
		if dev, err := d.Attached(ctx, multiDisk); dev != "" || err != nil {
			t.Errorf("other first %v: after Detach, Attached = %q, %v; want not attached here", otherFirst, dev, err)
		}
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

	srv.ResetCalls()
	_, err := d.Attach(ctx, multiDisk)
	wantMultiHeld(t, "Attach", err, o1, o1.NodeID, o2.NodeID, "2 instances")
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
// refuses the disk instead of handing its device on to be formatted and mounted. The fake has no multi-writer
// disks: a proxy adds the other instance to the users of every read of the disk once it has users.
func TestDisksMultiWriterRace(t *testing.T) {
	ctx := context.Background()
	c, srv, hs := multiFixture(t, 2)
	me, other := hs[0], hs[1]
	otherInst, err := c.Compute.Instances.Get(testProject, zones[0], other.NodeID).Do()
	if err != nil {
		t.Fatal(err)
	}
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
		if rec.Code == http.StatusOK && json.Unmarshal(body, &disk) == nil {
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
	wantMultiHeld(t, "Attach", err, other, other.NodeID, me.NodeID+" (this instance)")
	if n := srv.Calls()["compute.instances.attachDisk"]; n != 1 {
		t.Errorf("attachDisk called %d times, want 1 (the disk was free when Attach looked)", n)
	}
	dev, err = d.Attached(ctx, multiDisk)
	if dev != "" {
		t.Errorf("Attached named device %q", dev)
	}
	wantMultiHeld(t, "Attached", err, other, other.NodeID)
}
