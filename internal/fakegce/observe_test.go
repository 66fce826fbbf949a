package fakegce

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/fakecontrol"
)

// TestObserve checks an observer sees each API call with its operation, scope and zone or region, and whether
// it was rate limited; and that rate limited calls are counted in Throttled, which Mutating does not take for an
// operation under its key of /__fake/calls.
func TestObserve(t *testing.T) {
	fake, svc, d, _ := newClients(t)
	var mu sync.Mutex
	var got []Call
	fake.Observe(func(c Call) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, c)
	})
	if _, err := svc.Disks.List(proj, zone).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Subnetworks.List(proj, "us-central1").Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ManagedZones.List(proj).Do(); err != nil {
		t.Fatal(err)
	}
	if err := fake.SetFaults(Faults{RateLimitRate: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Firewalls.List(proj).Do(); err == nil {
		t.Error("a call under rateLimitRate 1 succeeded")
	}
	want := []Call{
		{Op: "compute.disks.list", Scope: "zones", Where: zone},
		{Op: "compute.subnetworks.list", Scope: "regions", Where: "us-central1"},
		{Op: "dns.managedZones.list"},
		{Op: "compute.firewalls.list", Scope: "global", RateLimited: true},
	}
	if n := fake.Throttled(); n != 1 {
		t.Errorf("Throttled() = %d, want 1", n)
	}
	if Mutating(fakecontrol.ThrottledKey) {
		t.Errorf("Mutating(%q) = true: a count of refusals is not an operation", fakecontrol.ThrottledKey)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed calls (-want +got):\n%s", diff)
	}
}
