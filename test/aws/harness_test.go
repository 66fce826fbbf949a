package aws

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakeaws"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

// The acceptance of the AWS provider, as an operator runs it: the kubeup binary against internal/fakeaws, the
// cloud's resources made and checked by an independent client, the AWS CLI.

const (
	bucket  = "kubeup-state"
	cluster = "aws.example.com"
	region  = "us-east-1"
)

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// account is one fake AWS account: the fake, the CLI pointed at it, and the environment kubeup runs in.
type account struct {
	t     testing.TB
	fake  *fakeaws.Server
	url   string
	env   []string
	cli   string
	bin   string // kubeup's binary
	vpc   string
	subns []string
	ec2   *ec2.Client
	asg   *autoscaling.Client
}

func subnetCIDR(i int) string { return fmt.Sprintf("10.0.%d.0/24", i+1) }

// setUpWithSDK makes what newAccount makes through the SDK.
func (a *account) setUpWithSDK(cfg aws.Config) {
	a.t.Helper()
	ctx := context.Background()
	if _, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		a.t.Fatal(err)
	}
	vpc, err := a.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		a.t.Fatal(err)
	}
	a.vpc = *vpc.Vpc.VpcId
	for i, z := range zones {
		sub, err := a.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(z), CidrBlock: aws.String(subnetCIDR(i))})
		if err != nil {
			a.t.Fatal(err)
		}
		a.subns = append(a.subns, *sub.Subnet.SubnetId)
	}
	if _, err := iam.NewFromConfig(cfg).CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("kubeup")}); err != nil {
		a.t.Fatal(err)
	}
	if _, err := route53.NewFromConfig(cfg).CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("test")}); err != nil {
		a.t.Fatal(err)
	}
}

// kubeupBinary is built once, by TestMain.
var kubeupBinary string

func TestMain(m *testing.M) { e2e.MainWithKubeup(m, &kubeupBinary) }

// newAccount returns a new fake account with the state bucket, a VPC, a subnet per zone, the instance profile
// "kubeup" and the hosted zone example.com: made by the AWS CLI withCLI, else through the SDK (the CLI takes
// seconds a call here: the tests that only need the account use the SDK).
func newAccount(t testing.TB, withCLI bool) *account {
	t.Helper()
	cli := "/usr/bin/aws"
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("aws"); err != nil {
			e2e.CannotRun(t, "the AWS CLI is not installed (the Makefile installs Debian's awscli): it is the referee of the fake AWS")
		}
	}
	fake := fakeaws.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	empty := filepath.Join(home, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "AWS_") && !strings.HasPrefix(k, "KUBEUP_") && k != "HOME" {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "AWS_ENDPOINT_URL="+srv.URL, "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x",
		"AWS_REGION="+region, "AWS_DEFAULT_REGION="+region, "AWS_CONFIG_FILE="+empty, "AWS_SHARED_CREDENTIALS_FILE="+empty,
		"AWS_EC2_METADATA_DISABLED=true", "KUBEUP_STATE_STORE=s3://"+bucket+"/clusters")
	cfg := aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption}, Region: region, Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""), BaseEndpoint: aws.String(srv.URL)}
	a := &account{t: t, fake: fake, url: srv.URL, env: env, cli: cli, bin: kubeupBinary, ec2: ec2.NewFromConfig(cfg),
		asg: autoscaling.NewFromConfig(cfg)}
	if !withCLI {
		a.setUpWithSDK(cfg)
		return a
	}
	a.aws("s3api", "create-bucket", "--bucket", bucket)
	var vpc struct{ Vpc struct{ VpcId string } }
	a.awsJSON(&vpc, "ec2", "create-vpc", "--cidr-block", "10.0.0.0/16")
	a.vpc = vpc.Vpc.VpcId
	for i, z := range zones {
		var sub struct{ Subnet struct{ SubnetId string } }
		a.awsJSON(&sub, "ec2", "create-subnet", "--vpc-id", a.vpc, "--availability-zone", z, "--cidr-block", subnetCIDR(i))
		a.subns = append(a.subns, sub.Subnet.SubnetId)
	}
	a.aws("iam", "create-instance-profile", "--instance-profile-name", "kubeup")
	a.aws("route53", "create-hosted-zone", "--name", "example.com", "--caller-reference", "test")
	return a
}

// aws runs the AWS CLI against the fake and returns its output; a failure fails the test.
func (a *account) aws(args ...string) []byte {
	a.t.Helper()
	cmd := exec.Command(a.cli, append([]string{"--endpoint-url", a.url, "--output", "json"}, args...)...)
	cmd.Env = a.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		a.t.Fatalf("aws %s: %v\n%s%s", strings.Join(args, " "), err, out, &stderr)
	}
	return out
}

func (a *account) awsJSON(v any, args ...string) {
	a.t.Helper()
	out := a.aws(args...)
	if err := json.Unmarshal(out, v); err != nil {
		a.t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// mustKubeup runs kubeup and fails the test when it fails.
func (a *account) mustKubeup(args ...string) string {
	a.t.Helper()
	return e2e.Kubeup{T: a.t, Bin: kubeupBinary, Env: a.env}.Must(args...)
}

// createCluster runs the issue's `kubeup create cluster` (with the flags naming the VPC and subnets, and the
// nodeup a test build of kubeup carries no sha256 of).
func (a *account) createCluster(name string) {
	a.t.Helper()
	a.mustKubeup("create", "cluster", "--name", name, "--cloud", "aws", "--zones", strings.Join(zones, ","),
		"--control-plane-count", "3", "--dns-zone", "example.com", "--vpc", a.vpc, "--subnets", strings.Join(a.subns, ","),
		"--nodeup-url", "https://example.com/nodeup", "--nodeup-sha256", strings.Repeat("ab", 32))
}

// owned is what the CLI sees tagged kubernetes.io/cluster/<name>=owned: volume ids, launch template names,
// Auto Scaling group names, security group names.
type owned struct {
	Volumes, Templates, Groups, SecurityGroups []string
}

func (a *account) owned(name string) owned {
	a.t.Helper()
	filter := "Name=tag:kubernetes.io/cluster/" + name + ",Values=owned"
	var o owned
	var vols struct{ Volumes []struct{ VolumeId string } }
	a.awsJSON(&vols, "ec2", "describe-volumes", "--filters", filter)
	for _, v := range vols.Volumes {
		o.Volumes = append(o.Volumes, v.VolumeId)
	}
	var lts struct {
		LaunchTemplates []struct{ LaunchTemplateName string }
	}
	a.awsJSON(&lts, "ec2", "describe-launch-templates", "--filters", filter)
	for _, lt := range lts.LaunchTemplates {
		o.Templates = append(o.Templates, lt.LaunchTemplateName)
	}
	var sgs struct{ SecurityGroups []struct{ GroupName string } }
	a.awsJSON(&sgs, "ec2", "describe-security-groups", "--filters", filter)
	for _, sg := range sgs.SecurityGroups {
		o.SecurityGroups = append(o.SecurityGroups, sg.GroupName)
	}
	var asgs struct {
		AutoScalingGroups []struct {
			AutoScalingGroupName string
			Tags                 []struct{ Key, Value string }
		}
	}
	a.awsJSON(&asgs, "autoscaling", "describe-auto-scaling-groups")
	for _, g := range asgs.AutoScalingGroups {
		for _, tag := range g.Tags {
			if tag.Key == "kubernetes.io/cluster/"+name && tag.Value == "owned" {
				o.Groups = append(o.Groups, g.AutoScalingGroupName)
			}
		}
	}
	return o
}

// ownedSDK is owned, read through the SDK; volumes by their Name tag.
func (a *account) ownedSDK(name string) owned {
	a.t.Helper()
	ctx := context.Background()
	filter := []ec2types.Filter{{Name: aws.String("tag:kubernetes.io/cluster/" + name), Values: []string{"owned"}}}
	var o owned
	vols, err := a.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: filter})
	if err != nil {
		a.t.Fatal(err)
	}
	for _, v := range vols.Volumes {
		for _, tag := range v.Tags {
			if *tag.Key == "Name" {
				o.Volumes = append(o.Volumes, *tag.Value)
			}
		}
	}
	lts, err := a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: filter})
	if err != nil {
		a.t.Fatal(err)
	}
	for _, lt := range lts.LaunchTemplates {
		o.Templates = append(o.Templates, *lt.LaunchTemplateName)
	}
	sgs, err := a.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: filter})
	if err != nil {
		a.t.Fatal(err)
	}
	for _, sg := range sgs.SecurityGroups {
		o.SecurityGroups = append(o.SecurityGroups, *sg.GroupName)
	}
	asgs, err := a.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		a.t.Fatal(err)
	}
	for _, g := range asgs.AutoScalingGroups {
		for _, tag := range g.Tags {
			if *tag.Key == "kubernetes.io/cluster/"+name && *tag.Value == "owned" {
				o.Groups = append(o.Groups, *g.AutoScalingGroupName)
			}
		}
	}
	return o
}

// records returns the zone's records as "name type value..." lines.
func (a *account) records() []string {
	a.t.Helper()
	var zones struct{ HostedZones []struct{ Id, Name string } }
	a.awsJSON(&zones, "route53", "list-hosted-zones")
	var out []string
	for _, z := range zones.HostedZones {
		var rrs struct {
			ResourceRecordSets []struct {
				Name, Type      string
				ResourceRecords []struct{ Value string }
			}
		}
		a.awsJSON(&rrs, "route53", "list-resource-record-sets", "--hosted-zone-id", z.Id)
		for _, rr := range rrs.ResourceRecordSets {
			line := rr.Name + " " + rr.Type
			for _, v := range rr.ResourceRecords {
				line += " " + v.Value
			}
			out = append(out, line)
		}
	}
	return out
}
