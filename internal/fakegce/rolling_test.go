package fakegce

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

// TestRecreateInstances: recreateInstances of a managed group's instance, after the group's template changed,
// deletes it and makes one under the same name with a new id from the current template (its machine type), and
// detaches its disks; the other instance is untouched. The operation is zonal and stays RUNNING for
// SlowOperations polls. An instance of another group is refused, changing nothing.
func TestRecreateInstances(t *testing.T) {
	fake, svc, _, _ := newClients(t)
	for _, tm := range []struct{ name, typ string }{{"cp-1", "e2-medium"}, {"cp-2", "e2-standard-4"}, {"other-1", "e2-small"}} {
		wait(t, svc, must[*compute.Operation](t)(svc.InstanceTemplates.Insert(proj, &compute.InstanceTemplate{Name: tm.name,
			Properties: &compute.InstanceProperties{MachineType: tm.typ, Disks: []*compute.AttachedDisk{{Boot: true}}}}).Do()))
	}
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.Insert(proj, zone, &compute.InstanceGroupManager{Name: "cp",
		BaseInstanceName: "cp", InstanceTemplate: "global/instanceTemplates/cp-1", TargetSize: 2}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.Insert(proj, zone, &compute.InstanceGroupManager{Name: "other",
		BaseInstanceName: "other", InstanceTemplate: "global/instanceTemplates/other-1", TargetSize: 1}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.Disks.Insert(proj, zone, &compute.Disk{Name: "data", SizeGb: 1}).Do()))
	managed := func(group string) []*compute.ManagedInstance {
		return must[*compute.InstanceGroupManagersListManagedInstancesResponse](t)(svc.InstanceGroupManagers.ListManagedInstances(proj, zone, group).Do()).ManagedInstances
	}
	before := managed("cp")
	if len(before) != 2 {
		t.Fatalf("%d managed instances, want 2", len(before))
	}
	victim, kept := before[0], before[1]
	wait(t, svc, must[*compute.Operation](t)(svc.Instances.AttachDisk(proj, zone, victim.Name, &compute.AttachedDisk{Source: "zones/" + zone + "/disks/data"}).Do()))
	wait(t, svc, must[*compute.Operation](t)(svc.InstanceGroupManagers.SetInstanceTemplate(proj, zone, "cp",
		&compute.InstanceGroupManagersSetInstanceTemplateRequest{InstanceTemplate: "global/instanceTemplates/cp-2"}).Do()))

	other := managed("other")[0]
	if _, err := svc.InstanceGroupManagers.RecreateInstances(proj, zone, "cp",
		&compute.InstanceGroupManagersRecreateInstancesRequest{Instances: []string{other.Instance}}).Do(); err == nil {
		t.Fatal("recreateInstances of another group's instance succeeded")
	} else if code, r := reason(err); code != 400 || r != "invalid" {
		t.Fatalf("recreateInstances of another group's instance: %v", err)
	}
	if got := managed("other")[0]; got.Id != other.Id {
		t.Fatalf("the refused call recreated %s", other.Name)
	}

	fake.SetFaults(Faults{SlowOperations: 2})
	op := must[*compute.Operation](t)(svc.InstanceGroupManagers.RecreateInstances(proj, zone, "cp",
		&compute.InstanceGroupManagersRecreateInstancesRequest{Instances: []string{victim.Instance}}).Do())
	if op.Zone == "" || op.OperationType != "compute.instanceGroupManagers.recreateInstances" {
		t.Fatalf("operation: %+v", op)
	}
	polls := 0
	for op.Status != "DONE" && polls < 10 {
		op = must[*compute.Operation](t)(svc.ZoneOperations.Get(proj, zone, op.Name).Do())
		polls++
	}
	if polls != 4 {
		t.Errorf("the operation was DONE after %d polls, want 4 (PENDING answered, RUNNING for 1+2)", polls)
	}
	fake.SetFaults(Faults{})

	type inst struct {
		Name, Template, Type, Status string
		New                          bool
	}
	var got []inst
	for _, mi := range managed("cp") {
		in := must[*compute.Instance](t)(svc.Instances.Get(proj, zone, mi.Name).Do())
		got = append(got, inst{Name: mi.Name, Template: lastElem(mi.Version.InstanceTemplate), Type: lastElem(in.MachineType),
			Status: mi.InstanceStatus, New: mi.Id != victim.Id && mi.Id != kept.Id})
		if mi.Instance != in.SelfLink || in.Id != mi.Id {
			t.Errorf("managed instance %s: instance %s, id %d; the instance is %s, id %d", mi.Name, mi.Instance, mi.Id, in.SelfLink, in.Id)
		}
	}
	want := []inst{
		{Name: victim.Name, Template: "cp-2", Type: "e2-standard-4", Status: "RUNNING", New: true},
		{Name: kept.Name, Template: "cp-1", Type: "e2-medium", Status: "RUNNING"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the group's instances after recreateInstances (-want +got):\n%s", diff)
	}
	if d := must[*compute.Disk](t)(svc.Disks.Get(proj, zone, "data").Do()); len(d.Users) != 0 {
		t.Errorf("the recreated instance's disk is still attached to %v", d.Users)
	}
	if n := fake.Calls()["compute.instanceGroupManagers.recreateInstances"]; n != 2 {
		t.Errorf("recreateInstances counted %d times, want 2", n)
	}
}
