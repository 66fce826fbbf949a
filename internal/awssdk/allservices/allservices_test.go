package allservices

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// owned says whether c is awssdk.OwnBodies' client.
func owned(c aws.HTTPClient) bool { return fmt.Sprintf("%T", c) == "awssdk.ownedBodies" }

func TestServiceOptionWrapsEachClient(t *testing.T) {
	cfg := WithOwnedBodies(aws.Config{Region: "us-east-1"})
	for name, c := range map[string]aws.HTTPClient{
		"ec2":         ec2.NewFromConfig(cfg).Options().HTTPClient,
		"autoscaling": autoscaling.NewFromConfig(cfg).Options().HTTPClient,
		"iam":         iam.NewFromConfig(cfg).Options().HTTPClient,
		"route53":     route53.NewFromConfig(cfg).Options().HTTPClient,
		"s3":          s3.NewFromConfig(cfg).Options().HTTPClient,
	} {
		if !owned(c) {
			t.Errorf("%s's HTTP client is %T, want OwnBodies'", name, c)
		}
	}
	if c := sts.NewFromConfig(cfg).Options().HTTPClient; c == nil {
		t.Error("sts has no HTTP client")
	} else if owned(c) {
		t.Error("a service ServiceOption does not name was wrapped")
	}
}
