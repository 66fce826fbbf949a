package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	compute "google.golang.org/api/compute/v1"
	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore"

	"kubeup.dev/kubeup/internal/awssdk/allservices"
)

const (
	bucket    = "kubeup-state"
	awsRegion = "us-east-1"
	project   = "p"
	gceRegion = "us-central1"
	network   = "kubeup-net"
	subnet    = "kubeup-subnet"
)

var (
	awsZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	gceZones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}
)

// shape is a cluster's size: its control-plane groups (one etcd member each, spread over three zones in order),
// and its node groups: 1 is kubeup create's "nodes" group across the zones, more are single-zone groups
// nodes-01, nodes-02, ... spread over the zones.
type shape struct {
	name                      string
	controlPlanes, nodeGroups int
}

var (
	threeMembers = shape{"3-member", 3, 1}
	// The model places a fourth and fifth control-plane group in zones that have one already
	// (control-plane-a-1, control-plane-a-2, ...): us-central1 has too few zones for five.
	fiveMembers = shape{"5-member", 5, 1}
	fiftyGroups = shape{"50-ig", 3, 47}
)

// account is one fake cloud with a cluster in its state store, which kubeup's pipeline updates in this process.
type account struct {
	tb   testing.TB
	name string // the cluster's
	cs   *cloudup.Clusters
	rec  *recorder
	aws  *fakeaws.Server // aws only
	gce  *fakegce.Server // gce only
}

// discard is the logger of every run: a benchmark prints nothing but its results.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// update runs `kubeup update cluster` (apply: --yes) with the engine's tuning.
func (a *account) update(ctx context.Context, apply bool, tuning cloudup.EngineTuning) error {
	_, err := a.cs.Update(ctx, a.name, cloudup.UpdateOptions{Apply: apply, Out: io.Discard, Logger: discard, Engine: tuning})
	if err != nil {
		return fmt.Errorf("update cluster %s (apply %v): %w", a.name, apply, err)
	}
	return nil
}

// newAccount returns a fake account of cloud ("aws" or "gce") with what the user makes before kubeup (the
// network, the subnets of the zones, the DNS zone example.com, the state bucket) and a cluster of the shape
// created in the state store, nothing of it in the cloud yet. The process's environment points the SDK or
// Google's clients at the fake until the benchmark or test ends.
func newAccount(tb testing.TB, cloud string, sh shape) *account {
	tb.Helper()
	switch cloud {
	case "aws":
		return newAWS(tb, sh)
	case "gce":
		return newGCE(tb, sh)
	}
	tb.Fatalf("no cloud %q", cloud)
	return nil
}

func newAWS(tb testing.TB, sh shape) *account {
	ctx := context.Background()
	fake := fakeaws.New()
	srv := httptest.NewServer(fake)
	tb.Cleanup(srv.Close)
	empty := filepath.Join(tb.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": srv.URL, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": awsRegion, "AWS_DEFAULT_REGION": awsRegion, "AWS_PROFILE": "", "AWS_CONFIG_FILE": empty,
		"AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		tb.Setenv(k, v)
	}
	cfg := aws.Config{ServiceOptions: []func(string, any){allservices.ServiceOption}, Region: awsRegion, Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""), BaseEndpoint: aws.String(srv.URL)}
	if _, err := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatal(err)
	}
	ec2c := ec2.NewFromConfig(cfg)
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		tb.Fatal(err)
	}
	var subnets []string
	for i, z := range awsZones {
		sub, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(z),
			CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/24", i+1))})
		if err != nil {
			tb.Fatal(err)
		}
		subnets = append(subnets, *sub.Subnet.SubnetId)
	}
	if _, err := iam.NewFromConfig(cfg).CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("kubeup")}); err != nil {
		tb.Fatal(err)
	}
	if _, err := route53.NewFromConfig(cfg).CreateHostedZone(ctx, &route53.CreateHostedZoneInput{Name: aws.String("example.com"), CallerReference: aws.String("bench")}); err != nil {
		tb.Fatal(err)
	}
	a := &account{tb: tb, name: "aws.example.com", rec: &recorder{}, aws: fake}
	a.create(ctx, "s3://"+bucket+"/clusters", sh, model.NewClusterOptions{CloudProvider: model.CloudAWS, Zones: awsZones,
		VPC: *vpc.Vpc.VpcId, Subnets: subnets})
	fake.Observe(a.rec.observeAWS)
	return a
}

func newGCE(tb testing.TB, sh shape) *account {
	ctx := context.Background()
	fake := fakegce.New()
	srv := httptest.NewServer(fake)
	tb.Cleanup(srv.Close)
	gcs := httptest.NewServer(fakegcs.New(bucket))
	tb.Cleanup(gcs.Close)
	endpoint := srv.URL + "/"
	for k, v := range map[string]string{
		"KUBEUP_GCE_ENDPOINT": endpoint, "STORAGE_EMULATOR_HOST": gcs.URL, "GCE_METADATA_HOST": "127.0.0.1:1",
	} {
		tb.Setenv(k, v)
	}
	svc, err := compute.NewService(ctx, option.WithEndpoint(endpoint+"compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		tb.Fatal(err)
	}
	op, err := svc.Networks.Insert(project, &compute.Network{Name: network, AutoCreateSubnetworks: false, ForceSendFields: []string{"AutoCreateSubnetworks"}}).Do()
	if err != nil {
		tb.Fatal(err)
	}
	waitGlobal(tb, svc, op)
	op, err = svc.Subnetworks.Insert(project, gceRegion, &compute.Subnetwork{Name: subnet,
		Network: "projects/" + project + "/global/networks/" + network, IpCidrRange: "10.1.0.0/16"}).Do()
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; op.Status != "DONE"; i++ {
		if i == 20 {
			tb.Fatalf("operation %s never DONE", op.Name)
		}
		if op, err = svc.RegionOperations.Get(project, gceRegion, op.Name).Do(); err != nil {
			tb.Fatal(err)
		}
	}
	d, err := dns.NewService(ctx, option.WithEndpoint(endpoint), option.WithoutAuthentication())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := d.ManagedZones.Create(project, &dns.ManagedZone{Name: "example-com", DnsName: "example.com.", Description: "bench"}).Do(); err != nil {
		tb.Fatal(err)
	}
	a := &account{tb: tb, name: "gce.example.com", rec: &recorder{}, gce: fake}
	a.create(ctx, "gs://"+bucket+"/clusters", sh, model.NewClusterOptions{CloudProvider: model.CloudGCE, Zones: gceZones,
		Project: project, Network: network, Subnetworks: []string{subnet}})
	fake.Observe(a.rec.observeGCE)
	return a
}

func waitGlobal(tb testing.TB, svc *compute.Service, op *compute.Operation) {
	tb.Helper()
	for i := 0; op.Status != "DONE"; i++ {
		if i == 20 {
			tb.Fatalf("operation %s never DONE", op.Name)
		}
		var err error
		if op, err = svc.GlobalOperations.Get(project, op.Name).Do(); err != nil {
			tb.Fatal(err)
		}
	}
}

// create writes the cluster of the shape into the state store at url, as `kubeup create cluster` does (the
// options' cloud, zones and network; a nodeup this build carries no sha256 of).
func (a *account) create(ctx context.Context, url string, sh shape, o model.NewClusterOptions) {
	tb := a.tb
	tb.Helper()
	store, err := statestore.Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	a.cs = &cloudup.Clusters{Store: store}
	o.Name, o.DNSZone, o.ControlPlaneCount = a.name, "example.com", sh.controlPlanes
	o.NodeupURL, o.NodeupSHA256 = "https://example.com/nodeup", strings.Repeat("ab", 32)
	if sh.nodeGroups == 1 {
		o.NodeCount = 1
	}
	c, igs, err := model.NewCluster(o)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range sh.nodeGroups {
		if sh.nodeGroups == 1 {
			break
		}
		size := int32(1)
		igs = append(igs, &model.InstanceGroup{APIVersion: model.APIVersion, Kind: model.KindInstanceGroup,
			Metadata: model.ObjectMeta{Name: fmt.Sprintf("nodes-%02d", i+1)},
			Spec:     model.InstanceGroupSpec{Role: model.RoleNode, Zones: []string{o.Zones[i%len(o.Zones)]}, MinSize: &size, MaxSize: &size}})
	}
	if err := a.cs.Create(ctx, "bench", c, igs); err != nil {
		tb.Fatal(err)
	}
}

// since returns the milliseconds since start.
func since(start time.Time) float64 { return float64(time.Since(start).Microseconds()) / 1000 }
