package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/internal/fakecontrol/fakecontroltest"
)

// TestStandalone builds the command, refuses bad --faults, runs it on a free port, reads the address it prints,
// makes calls through google.golang.org/api (an operation slowed by --faults) and reads the counts back from
// /__fake/calls; SIGINT stops it cleanly.
func TestStandalone(t *testing.T) {
	bin := fakecontroltest.Build(t, "fakegce")
	fakecontroltest.RefusesFaults(t, bin, `{"rateLimitRate": 2}`)
	fake := fakecontroltest.Start(t, bin, "--faults", `{"slowOperations": 1, "latencyMillis": 1}`)

	svc, err := compute.NewService(context.Background(), option.WithEndpoint(fake.Base+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Disks.Insert("p", "us-central1-a", &compute.Disk{Name: "d"}).Do()
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for range 3 {
		op, err = svc.ZoneOperations.Get("p", "us-central1-a", op.Name).Do()
		if err != nil {
			t.Fatal(err)
		}
		status = append(status, op.Status)
	}
	if diff := cmp.Diff([]string{"RUNNING", "RUNNING", "DONE"}, status); diff != "" {
		t.Errorf("operation polls with slowOperations 1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"compute.disks.insert": 1, "compute.zoneOperations.get": 3}, fake.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	fake.Interrupt()
}
