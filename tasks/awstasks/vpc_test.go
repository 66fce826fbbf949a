package awstasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"kubeup.dev/kubeup/engine"
)

// The user's VPC, subnets and instance profile are checked, never changed; what is not there or elsewhere is
// an error that names the spec's field, the region (and the zone of a subnet) and the fix.
func TestUserNetworkIsCheckedNeverChanged(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	validate := engine.WithLifecycle(engine.ExistsAndValidates)
	build := func(vpc, profile, zone, lastSubnet string) func() *engine.Graph[*Cloud] {
		return func() *engine.Graph[*Cloud] {
			g := engine.NewGraph[*Cloud]()
			v := engine.Add(g, &VPC{ID: vpc, SpecPath: "spec.aws.vpcID"}, validate)
			for i, id := range n.subnets {
				z := zones[i]
				if i == 0 && zone != "" {
					z = zone
				}
				if i == len(n.subnets)-1 && lastSubnet != "" {
					id = lastSubnet
				}
				engine.Add(g, &Subnet{ID: id, SpecPath: fmt.Sprintf("spec.aws.subnets[%d]", i), VPC: v, Zone: aws.String(z)}, validate)
			}
			engine.Add(g, &InstanceProfile{Name: profile, SpecPath: "spec.aws.instanceProfile"}, validate)
			return g
		}
	}
	srv.ResetCalls()
	if p := mustRun(t, c, engine.Apply, build(n.vpc, n.profile, "", "")); !p.Empty() {
		t.Errorf("changes: %v", p.Changes)
	}
	if m := mutatingCalls(srv.Calls()); len(m) > 0 {
		t.Errorf("mutating calls %v", m)
	}
	if got := srv.Calls()["DescribeSubnets"]; got != 1 {
		t.Errorf("%d DescribeSubnets for 3 subnets of one VPC, want 1", got)
	}

	const none = "subnet-0000000000000000f"
	for _, tc := range []struct {
		name                     string
		vpc, profile, zone, last string
		wantKey, wantErr         string
		notFound                 bool
	}{
		{name: "no VPC", vpc: "vpc-00000000000000000", profile: n.profile, wantKey: "VPC/vpc-00000000000000000", notFound: true,
			wantErr: "spec.aws.vpcID: VPC vpc-00000000000000000 does not exist in region us-east-1: kubeup never creates a VPC"},
		{name: "no profile", vpc: n.vpc, profile: "nobody", wantKey: "InstanceProfile/nobody", notFound: true,
			wantErr: "spec.aws.instanceProfile: IAM instance profile nobody does not exist in this AWS account"},
		{name: "no subnet", vpc: n.vpc, profile: n.profile, last: none, wantKey: "Subnet/" + none, notFound: true,
			wantErr: "spec.aws.subnets[2]: subnet " + none + " does not exist in region us-east-1: kubeup never creates a subnet; " +
				"create it in VPC " + n.vpc + " and zone us-east-1c of region us-east-1"},
		{name: "subnet in another zone", vpc: n.vpc, profile: n.profile, zone: "us-east-1c", wantKey: "Subnet/" + n.subnets[0],
			wantErr: "spec.aws.subnets[0]: subnet " + n.subnets[0] + " is in zone us-east-1a of VPC " + n.vpc +
				" (region us-east-1), not in zone us-east-1c of VPC " + n.vpc + " as the spec says"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.NewRun()
			_, err := runOnce(t, c, engine.DryRun, build(tc.vpc, tc.profile, tc.zone, tc.last))
			var re *engine.RunError
			if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Key.String() != tc.wantKey ||
				!strings.Contains(re.Failed[0].Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %s failed: %s", err, tc.wantKey, tc.wantErr)
			}
			if got := errors.Is(err, engine.ErrNotFound); got != tc.notFound {
				t.Errorf("errors.Is(err, engine.ErrNotFound) = %v, want %v", got, tc.notFound)
			}
			if engine.ClassOf(re.Failed[0].Err) != engine.ClassTerminal {
				t.Errorf("err = %v, want a terminal error", err)
			}
		})
	}
}

func TestUserNetworkRenderRefuses(t *testing.T) {
	c, _ := newTestCloud(t)
	ctx := context.Background()
	for _, err := range []error{
		(&VPC{}).Render(ctx, c, nil, &VPC{ID: "vpc-1"}, nil),
		(&Subnet{}).Render(ctx, c, nil, &Subnet{ID: "subnet-1"}, nil),
		(&InstanceProfile{}).Render(ctx, c, nil, &InstanceProfile{Name: "p"}, nil),
	} {
		if engine.ClassOf(err) != engine.ClassTerminal || !strings.Contains(err.Error(), "never") {
			t.Errorf("err = %v, want a terminal refusal", err)
		}
	}
}

// TestVPCRefusesAnOverlappingPodCIDR: a pod range that overlaps the VPC's block is refused by its field path
// (kubenet's routes could not take those addresses from the VPC's local route); one outside it is not.
func TestVPCRefusesAnOverlappingPodCIDR(t *testing.T) {
	c, _ := newTestCloud(t)
	n := makeNetwork(t, c)
	for _, tc := range []struct {
		pod, want string
	}{
		{"10.0.128.0/17", "spec.networking.podCIDR: 10.0.128.0/17 overlaps 10.0.0.0/16 of VPC " + n.vpc},
		{"10.0.0.0/8", "spec.networking.podCIDR: 10.0.0.0/8 overlaps"},
		{"100.96.0.0/11", ""},
		{"", ""},
	} {
		_, err := runOnce(t, c, engine.DryRun, func() *engine.Graph[*Cloud] {
			g := engine.NewGraph[*Cloud]()
			engine.Add(g, &VPC{ID: n.vpc, SpecPath: "spec.aws.vpcID", PodCIDR: tc.pod}, engine.WithLifecycle(engine.ExistsAndValidates))
			return g
		})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("pod range %q: %v, want %q", tc.pod, err, tc.want)
		}
	}
}
