package awstasks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"kubeup.dev/kubeup/engine"
)

// The user's VPC, subnets and instance profile are checked, never changed.
func TestUserNetworkIsCheckedNeverChanged(t *testing.T) {
	c, srv := newTestCloud(t)
	n := makeNetwork(t, c)
	validate := engine.WithLifecycle(engine.ExistsAndValidates)
	build := func(vpc, profile string, zone string) func() *engine.Graph[*Cloud] {
		return func() *engine.Graph[*Cloud] {
			g := engine.NewGraph[*Cloud]()
			v := engine.Add(g, &VPC{ID: vpc}, validate)
			for i, id := range n.subnets {
				z := zones[i]
				if i == 0 && zone != "" {
					z = zone
				}
				engine.Add(g, &Subnet{ID: id, VPC: v, Zone: aws.String(z)}, validate)
			}
			engine.Add(g, &InstanceProfile{Name: profile}, validate)
			return g
		}
	}
	srv.ResetCalls()
	if p := mustRun(t, c, engine.Apply, build(n.vpc, n.profile, "")); !p.Empty() {
		t.Errorf("changes: %v", p.Changes)
	}
	if m := mutatingCalls(srv.Calls()); len(m) > 0 {
		t.Errorf("mutating calls %v", m)
	}
	if got := srv.Calls()["DescribeSubnets"]; got != 1 {
		t.Errorf("%d DescribeSubnets for 3 subnets of one VPC, want 1", got)
	}

	for _, tc := range []struct {
		name                string
		vpc, profile, zone  string
		wantKey, wantDetail string
	}{
		{"no VPC", "vpc-00000000000000000", n.profile, "", "VPC/vpc-00000000000000000", "does not exist"},
		{"no profile", n.vpc, "nobody", "", "InstanceProfile/nobody", "does not exist"},
		{"subnet in another zone", n.vpc, n.profile, "us-east-1c", "Subnet/" + n.subnets[0], "Zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runOnce(t, c, engine.Apply, build(tc.vpc, tc.profile, tc.zone))
			var re *engine.RunError
			if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Key.String() != tc.wantKey ||
				!strings.Contains(re.Failed[0].Error(), tc.wantDetail) {
				t.Errorf("err = %v, want %s failed: %s", err, tc.wantKey, tc.wantDetail)
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
