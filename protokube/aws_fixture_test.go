package protokube

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/tasks/volumetasks"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// awsFixture is a fake AWS (internal/fakeaws, in this process) with a VPC, a subnet per zone and a public
// hosted zone (newAWSAccount), and, made by newAWSFixture, an Auto Scaling group that runs one control-plane
// instance per zone from a launch template.
type awsFixture struct {
	s         *fakeaws.Server
	url       string
	cfg       aws.Config
	ec2       *ec2.Client
	route53   *route53.Client
	vpc       string
	subnets   []string        // in zone order
	instances []cloudInstance // in zone order
}

// newAWSAccount returns a fake AWS with a VPC, a subnet per zone, the hosted zone dnsZone, and, when bucket is
// not "", that S3 bucket and the instance profile "kubeup" (what kubeup needs to make a cluster).
func newAWSAccount(t *testing.T, dnsZone, bucket string, zones ...string) *awsFixture {
	t.Helper()
	ctx := context.Background()
	s := fakeaws.New()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	cfg := aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption},
		Region: "us-east-1", BaseEndpoint: aws.String(hs.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
	}
	f := &awsFixture{s: s, url: hs.URL, cfg: cfg, ec2: ec2.NewFromConfig(cfg), route53: route53.NewFromConfig(cfg)}
	vpc, err := f.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	f.vpc = aws.ToString(vpc.Vpc.VpcId)
	for i, z := range zones {
		sn, err := f.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(z), CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/24", i))})
		if err != nil {
			t.Fatal(err)
		}
		f.subnets = append(f.subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	if _, err := f.route53.CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String(dnsZone), CallerReference: aws.String("fixture")}); err != nil {
		t.Fatal(err)
	}
	if bucket != "" {
		if _, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		if _, err := iam.NewFromConfig(cfg).CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("kubeup")}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func newAWSFixture(t *testing.T, dnsZone string, zones ...string) *awsFixture {
	t.Helper()
	ctx := context.Background()
	f := newAWSAccount(t, dnsZone, "", zones...)
	im, err := f.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Images) == 0 {
		t.Fatal("the fake has no image")
	}
	_, err = f.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("control-plane"),
		LaunchTemplateData: &types.RequestLaunchTemplateData{ImageId: im.Images[0].ImageId, InstanceType: types.InstanceTypeM5Large},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := int32(len(zones))
	_, err = autoscaling.NewFromConfig(f.cfg).CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("control-plane"),
		LaunchTemplate:       &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String("control-plane"), Version: aws.String("$Default")},
		MinSize:              aws.Int32(n), MaxSize: aws.Int32(n), DesiredCapacity: aws.Int32(n),
		VPCZoneIdentifier: aws.String(strings.Join(f.subnets, ",")),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range zones {
		for _, i := range f.s.Instances() {
			if i.Zone == z {
				f.instances = append(f.instances, cloudInstance{me: volumetasks.Holder{NodeID: i.InstanceID, InternalIP: i.PrivateIP, ExternalIP: i.PublicIP}, zone: z})
			}
		}
	}
	if len(f.instances) != len(zones) {
		t.Fatalf("the Auto Scaling group runs %v, want one instance in each of %v", f.s.Instances(), zones)
	}
	f.s.ResetCalls()
	return f
}

// imds serves the instance metadata of instance id on a server of its own, and returns its address.
func (f *awsFixture) imds(t *testing.T, id string) string {
	t.Helper()
	hs := httptest.NewServer(f.s.IMDSHandler(id))
	t.Cleanup(hs.Close)
	return hs.URL
}

// env is the environment that points the SDK of a process at the fake, with imds as its instance metadata
// service, and at nothing of this machine's own AWS configuration.
func (f *awsFixture) env(t *testing.T, imds string) []string {
	t.Helper()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"AWS_ENDPOINT_URL=" + f.url,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds,
		"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=SECRETTEST",
		"AWS_CONFIG_FILE=" + empty, "AWS_SHARED_CREDENTIALS_FILE=" + empty,
		"AWS_REGION=", "AWS_DEFAULT_REGION=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=",
	}
}

// volume creates an EBS volume in zone with tags, and returns its id.
func (f *awsFixture) volume(t *testing.T, zone string, tags map[string]string) string {
	t.Helper()
	spec := types.TagSpecification{ResourceType: types.ResourceTypeVolume}
	for k, v := range tags {
		spec.Tags = append(spec.Tags, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := f.ec2.CreateVolume(context.Background(), &ec2.CreateVolumeInput{
		AvailabilityZone: aws.String(zone), Size: aws.Int32(1), VolumeType: types.VolumeTypeGp3, TagSpecifications: []types.TagSpecification{spec},
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VolumeId)
}
