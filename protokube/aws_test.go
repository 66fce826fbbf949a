package protokube

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestAWSNode: on AWS, the node is the instance IMDS names, and the flags win over it.
func TestAWSNode(t *testing.T) {
	ctx := context.Background()
	f := newAWSFixture(t, "example.com", "us-east-1a", "us-east-1b")
	i := f.instances[1]
	setenv(t, f.env(t, f.imds(t, i.me.NodeID)))
	pc := &model.ProtokubeConfig{CloudProvider: model.CloudAWS, Zone: i.zone, DNSZone: "example.com"}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	o := Options{Logger: quiet}
	if err := o.identify(ctx, pc); err != nil {
		t.Fatal(err)
	}
	if o.Node != i.me || i.me.ExternalIP == "" {
		t.Errorf("Node = %+v, want the instance %+v", o.Node, i.me)
	}

	o = Options{Logger: quiet, Node: volumetasks.Holder{NodeID: "custom", InternalIP: "10.9.9.9"}}
	if err := o.identify(ctx, pc); err != nil {
		t.Fatal(err)
	}
	if want := (volumetasks.Holder{NodeID: "custom", InternalIP: "10.9.9.9", ExternalIP: i.me.ExternalIP}); o.Node != want {
		t.Errorf("Node with flags = %+v, want %+v", o.Node, want)
	}
}

// TestAWSProviders: the providers are made once and kept; each round lists the records once, the hosted zone is
// found once; a configuration of another zone than the instance's is refused.
func TestAWSProviders(t *testing.T) {
	ctx := context.Background()
	f := newAWSFixture(t, "example.com", "us-east-1a")
	i := f.instances[0]
	setenv(t, f.env(t, f.imds(t, i.me.NodeID)))
	nc := &model.NodeConfig{Protokube: &model.ProtokubeConfig{CloudProvider: model.CloudAWS, Zone: i.zone, DNSZone: "example.com"}}
	o := Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Root: t.TempDir()}
	if err := o.identify(ctx, nc.Protokube); err != nil {
		t.Fatal(err)
	}
	vol := f.volume(t, i.zone, map[string]string{"kubernetes.io/cluster/c": "owned"})
	f.s.ResetCalls()
	var first any
	for round := range 3 {
		vols, dns, err := o.cloudProviders(nc, o.Root, o.Node, o.Lease)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			first = dns
		} else if dns != first {
			t.Errorf("round %d: a new DNS provider", round)
		}
		if vols.Node() != i.me {
			t.Errorf("the volumes' node = %+v, want %+v", vols.Node(), i.me)
		}
		for range 2 {
			if _, err := dns.Get(ctx, "api.internal.c.example.com", "A"); err != nil {
				t.Fatal(err)
			}
		}
		got, err := vols.List(ctx, map[string]string{"kubernetes.io/cluster/c": "owned"})
		if err != nil || len(got) != 1 || got[0].ID != vol {
			t.Fatalf("List = %+v, %v, want %s", got, err, vol)
		}
	}
	want := map[string]int{"ListHostedZonesByName": 1, "ListResourceRecordSets": 3, "DescribeVolumes": 3}
	if diff := cmp.Diff(want, f.s.Calls()); diff != "" {
		t.Errorf("calls of 3 rounds (-want +got):\n%s", diff)
	}

	other := &model.NodeConfig{Protokube: &model.ProtokubeConfig{CloudProvider: model.CloudAWS, Zone: "us-east-1c", DNSZone: "example.com"}}
	if _, _, err := o.cloudProviders(other, o.Root, o.Node, o.Lease); err == nil || !strings.Contains(err.Error(), "zone us-east-1c") {
		t.Errorf("a configuration of another zone: %v, want an error naming it", err)
	}
}
