package main

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
	"kubeup.dev/kubeup/internal/fakecontrol/fakecontroltest"
)

// TestStandalone builds the command, refuses bad --faults, runs it on a free port, reads the address it prints,
// makes calls through the SDK (a change pending for --change-pending-polls) and reads the counts back from
// /__fake/calls; SIGINT stops it cleanly.
func TestStandalone(t *testing.T) {
	bin := fakecontroltest.Build(t, "fakeaws")
	fakecontroltest.RefusesFaults(t, bin, `{"throttleRate": 2}`)
	fake := fakecontroltest.Start(t, bin, "--change-pending-polls", "1", "--faults", `{"latencyMillis": 1}`)

	c := route53.NewFromConfig(aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption}, Region: "us-east-1", BaseEndpoint: aws.String(fake.Base), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")})
	ctx := context.Background()
	zone, err := c.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("r")})
	if err != nil {
		t.Fatalf("CreateHostedZone: %v", err)
	}
	var status []types.ChangeStatus
	for range 2 {
		ch, err := c.GetChange(ctx, &route53.GetChangeInput{Id: zone.ChangeInfo.Id})
		if err != nil {
			t.Fatalf("GetChange: %v", err)
		}
		status = append(status, ch.ChangeInfo.Status)
	}
	if diff := cmp.Diff([]types.ChangeStatus{types.ChangeStatusPending, types.ChangeStatusInsync}, status); diff != "" {
		t.Errorf("GetChange with --change-pending-polls 1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"CreateHostedZone": 1, "GetChange": 2}, fake.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	fake.Interrupt()
}
