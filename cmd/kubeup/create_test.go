package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/statestore/gsstore"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// s3State serves an in-memory S3 with the bucket kubeup-state, points the SDK at it (and its EC2 at a fake
// AWS, which create asks for the region's zones), and returns the store URL s3://kubeup-state/clusters.
func s3State(t *testing.T) string {
	t.Helper()
	mem := s3mem.New()
	if err := mem.CreateBucket("kubeup-state"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	ec2 := httptest.NewServer(fakeaws.New())
	t.Cleanup(ec2.Close)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": srv.URL, "AWS_ENDPOINT_URL_EC2": ec2.URL, "AWS_MAX_ATTEMPTS": "1",
	} {
		t.Setenv(k, v)
	}
	return "s3://kubeup-state/clusters"
}

const (
	testNodeupURL    = "https://downloads.example.com/kubeup/nodeup-linux-amd64"
	testNodeupSHA256 = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
)

// awsCreate is the command: three zones, three control planes, the VPC and its subnets.
func awsCreate(extra ...string) []string {
	return append([]string{"create", "cluster", "--name", "aws.example.com", "--cloud", "aws",
		"--zones", "us-east-1a,us-east-1b,us-east-1c", "--control-plane-count", "3", "--dns-zone", "example.com",
		"--vpc", "vpc-0123456789abcdef0",
		"--subnets", "subnet-0000000000000000a,subnet-0000000000000000b,subnet-0000000000000000c"}, extra...)
}

func TestCreateAWS(t *testing.T) {
	state := s3State(t)
	withState := func(args []string) []string { return append([]string{"--state", state}, args...) }

	// A development build carries no nodeup: the spec must name one, and create says how.
	_, _, err := kubeup(t, "", withState(awsCreate())...)
	if err == nil || !strings.Contains(err.Error(), "spec.nodeup: required: this kubeup is a development build") ||
		!strings.Contains(err.Error(), "--nodeup-url URL --nodeup-sha256 HEX") {
		t.Fatalf("create without a nodeup in a development build: %v", err)
	}
	if out, _, _ := kubeup(t, "", "--state", state, "get", "clusters"); strings.Contains(out, "aws.example.com") {
		t.Fatal("a refused create stored the cluster")
	}

	out := mustKubeup(t, "", withState(awsCreate("--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256))...)
	if !strings.Contains(out, "Created cluster aws.example.com in s3://kubeup-state/clusters with 4 instance groups.") {
		t.Errorf("create printed:\n%s", out)
	}
	spec := mustKubeup(t, "", "--state", state, "get", "cluster", "aws.example.com", "-o", "yaml")
	for _, want := range []string{
		"  aws:\n    subnets:\n    - id: subnet-0000000000000000a\n      zone: us-east-1a\n    - id: subnet-0000000000000000b\n      zone: us-east-1b\n" +
			"    - id: subnet-0000000000000000c\n      zone: us-east-1c\n    vpcID: vpc-0123456789abcdef0\n",
		"  configBase: s3://kubeup-state/clusters/aws.example.com\n",
		"  nodeup:\n    sha256: " + testNodeupSHA256 + "\n    url: " + testNodeupURL + "\n",
	} {
		if !strings.Contains(spec, want) {
			t.Errorf("the stored spec lacks\n%s\nin:\n%s", want, spec)
		}
	}
	full := mustKubeup(t, "", "--state", state, "get", "cluster", "aws.example.com", "--full", "-o", "yaml")
	for _, want := range []string{"    instanceProfile: kubeup\n", "    controlPlaneInstanceProfile: kubeup\n", "    apiAccess:\n    - 0.0.0.0/0\n", "  region: us-east-1\n"} {
		if !strings.Contains(full, want) {
			t.Errorf("the complete spec lacks %q:\n%s", want, full)
		}
	}
	igs := mustKubeup(t, "", "--state", state, "get", "instancegroups", "--name", "aws.example.com")
	for _, ig := range []string{"control-plane-a", "control-plane-b", "control-plane-c", "nodes"} {
		if !strings.Contains(igs, ig) {
			t.Errorf("get instancegroups lacks %s:\n%s", ig, igs)
		}
	}
}

func TestCreateAWSDryRun(t *testing.T) {
	state := s3State(t)
	out := mustKubeup(t, "", "--state", state, "create", "cluster", "aws.example.com", "--cloud", "aws", "--zones", "us-east-1a,us-east-1b",
		"--vpc", "vpc-0123456789abcdef0", "--subnets", "us-east-1b=subnet-0000000000000000b,us-east-1a=subnet-0000000000000000a",
		"--instance-profile", "my-nodes", "--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256, "--dry-run", "-o", "yaml")
	objs, err := model.Decode("create --dry-run", []byte(out))
	if err != nil {
		t.Fatalf("the dry run's spec does not decode: %v\n%s", err, out)
	}
	a := objs.Cluster.Spec.AWS
	if a == nil || a.InstanceProfile != "my-nodes" || len(a.Subnets) != 2 || a.Subnets[0] != (model.AWSSubnetSpec{Zone: "us-east-1a", ID: "subnet-0000000000000000a"}) {
		t.Errorf("spec.aws = %+v, want the instance profile and the subnets in the order of --zones", a)
	}
	if out, _, _ := kubeup(t, "", "--state", state, "get", "clusters"); strings.Contains(out, "aws.example.com") {
		t.Error("a dry run stored the cluster")
	}
}

func TestCreateAWSRefusals(t *testing.T) {
	state := s3State(t)
	nodeup := []string{"--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a subnet too few", append([]string{"create", "cluster", "aws.example.com", "--cloud", "aws", "--zones", "us-east-1a,us-east-1b",
			"--vpc", "vpc-0123456789abcdef0", "--subnets", "subnet-0000000000000000a"}, nodeup...),
			"--subnets: 1 subnet ids for 2 zones (us-east-1a,us-east-1b): give one subnet per zone, in the order of --zones, or ZONE=ID pairs"},
		{"not AWS's ids", append([]string{"create", "cluster", "aws.example.com", "--cloud", "aws", "--zones", "us-east-1a",
			"--vpc", "vpc-1", "--subnets", "sub-1"}, nodeup...),
			"2 problems:\n  spec.aws.vpcID: \"vpc-1\" is not a VPC id"},
		{"a nodeup url without its sha256", []string{"create", "cluster", "aws.example.com", "--cloud", "aws", "--zones", "us-east-1a",
			"--vpc", "vpc-0123456789abcdef0", "--subnets", "subnet-0000000000000000a", "--nodeup-url", testNodeupURL},
			"spec.nodeup.sha256: required: the sha256 of the binary spec.nodeup.url names"},
		{"aws flags on local", []string{"create", "cluster", "local.example.com", "--cloud", "local", "--zones", "a", "--subnets", "subnet-0000000000000000a"},
			"--subnets is for --cloud aws, not --cloud local"},
		{"nodeup flags on local", []string{"create", "cluster", "local.example.com", "--cloud", "local", "--zones", "a", "--nodeup-url", testNodeupURL},
			"--nodeup-url is for the clouds whose machines fetch nodeup at boot (aws, gce), not --cloud local"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := kubeup(t, "", append([]string{"--state", state}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// gsState serves internal/fakegcs with the bucket kubeup-state, points the client at it (and the compute client
// at internal/fakegce, which create asks for the project's zones), and returns the store URL
// gs://kubeup-state/clusters.
func gsState(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(fakegcs.New("kubeup-state"))
	t.Cleanup(srv.Close)
	t.Setenv(gsstore.EnvStorageEmulatorHost, strings.TrimPrefix(srv.URL, "http://"))
	compute := httptest.NewServer(fakegce.New())
	t.Cleanup(compute.Close)
	t.Setenv(gcetasks.EndpointEnv, compute.URL)
	return "gs://kubeup-state/clusters"
}

// gceCreate is the command: three zones, three control planes, the network and its subnetwork.
func gceCreate(extra ...string) []string {
	return append([]string{"create", "cluster", "--name", "gce.example.com", "--cloud", "gce", "--project", "kubeup-demo",
		"--zones", "us-central1-a,us-central1-b,us-central1-c", "--control-plane-count", "3", "--dns-zone", "example.com",
		"--network", "kubeup-net", "--subnetwork", "kubeup-us-central1"}, extra...)
}

func TestCreateGCE(t *testing.T) {
	state := gsState(t)
	out := mustKubeup(t, "", append([]string{"--state", state}, gceCreate("--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256)...)...)
	if !strings.Contains(out, "Created cluster gce.example.com in gs://kubeup-state/clusters with 4 instance groups.") {
		t.Errorf("create printed:\n%s", out)
	}
	spec := mustKubeup(t, "", "--state", state, "get", "cluster", "gce.example.com", "-o", "yaml")
	for _, want := range []string{
		"  gce:\n    network: kubeup-net\n    subnetworks:\n    - name: kubeup-us-central1\n      region: us-central1\n",
		"  configBase: gs://kubeup-state/clusters/gce.example.com\n",
		"  project: kubeup-demo\n",
	} {
		if !strings.Contains(spec, want) {
			t.Errorf("the stored spec lacks\n%s\nin:\n%s", want, spec)
		}
	}
	full := mustKubeup(t, "", "--state", state, "get", "cluster", "gce.example.com", "--full", "-o", "yaml")
	for _, want := range []string{"    serviceAccount: default\n", "    apiAccess:\n    - 0.0.0.0/0\n"} {
		if !strings.Contains(full, want) {
			t.Errorf("the complete spec lacks %q:\n%s", want, full)
		}
	}
	dot := mustKubeup(t, "", "--state", state, "graph", "gce.example.com")
	if !strings.Contains(dot, "InstanceGroupManager/us-central1-a/control-plane-a-us-central1-a-gce-example-com") {
		t.Errorf("the cloud graph lacks the control plane's group:\n%s", dot)
	}
}

func TestCreateGCERefusals(t *testing.T) {
	state := gsState(t)
	nodeup := []string{"--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256}
	for _, tt := range []struct {
		name  string
		state string
		args  []string
		want  string
	}{
		{"no network", state, append([]string{"create", "cluster", "gce.example.com", "--cloud", "gce", "--project", "kubeup-demo", "--zones", "us-central1-a"}, nodeup...),
			"spec.gce.network: required: the name of the VPC network the cluster runs in (kubeup create cluster --network)"},
		{"a subnetwork of another region", state, append([]string{"create", "cluster", "gce.example.com", "--cloud", "gce", "--project", "kubeup-demo",
			"--zones", "us-central1-a,us-central1-b,us-central1-c", "--network", "n", "--subnetwork", "us-east1=s"}, nodeup...),
			`--subnetwork: "us-east1=s": region "us-east1" is not a region of --zones us-central1-a,us-central1-b,us-central1-c (us-central1)`},
		{"a store on S3", s3State(t), append(gceCreate(), nodeup...),
			"a gce cluster's store must be gs://BUCKET (set KUBEUP_STATE_STORE or --state to a gs:// URL)"},
		{"gce flags on aws", state, []string{"create", "cluster", "aws.example.com", "--cloud", "aws", "--zones", "us-east-1a", "--subnetwork", "s"},
			"--subnetwork is for --cloud gce, not --cloud aws"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := kubeup(t, "", append([]string{"--state", tt.state}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if out, _, _ := kubeup(t, "", "--state", state, "get", "clusters"); strings.Contains(out, "gce.example.com") {
		t.Error("a refused create stored the cluster")
	}
}

// create cluster --cloud aws checks the zones against the region's (DescribeAvailabilityZones): a zone AWS does
// not have is refused at its spec.zones[N], with the region's zones, and nothing is stored; so is a file's. A
// zone that is no AWS zone at all names spec.zones[N], not spec.region. When AWS cannot be asked (no credentials,
// no network, an error), create works and warns that the zones were not checked (cloudup's
// TestCheckZonesWithoutCredentials: no credentials).
func TestCreateAWSChecksZones(t *testing.T) {
	state := s3State(t)
	nodeup := []string{"--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256}
	create := func(zones string, extra ...string) []string {
		return append(append([]string{"--state", state, "create", "cluster", "aws.example.com", "--cloud", "aws", "--zones", zones,
			"--vpc", "vpc-0123456789abcdef0", "--subnets", "subnet-0000000000000000a,subnet-0000000000000000b"}, nodeup...), extra...)
	}
	stored := func() bool {
		out, _, _ := kubeup(t, "", "--state", state, "get", "clusters")
		return strings.Contains(out, "aws.example.com")
	}
	for _, tt := range []struct {
		name, zones string
		extra       []string
		want        string
	}{
		{"a zone the region lacks", "us-east-1a,us-east-1x", nil,
			`create cluster aws.example.com: spec.zones[1]: "us-east-1x" is not a zone of region us-east-1 (its zones: us-east-1a, ` +
				`us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f): name zones of region us-east-1 (kubeup create cluster --zones)`},
		{"the same, in a dry run", "us-east-1x,us-east-1a", []string{"--dry-run"},
			`create cluster: spec.zones[0]: "us-east-1x" is not a zone of region us-east-1`},
		{"no AWS zone", "foo,us-east-1a", nil,
			`spec.zones[0]: "foo" is not an AWS availability zone: an availability zone is its region and one letter`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := kubeup(t, "", create(tt.zones, tt.extra...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "spec.region") {
				t.Errorf("the error blames spec.region: %v", err)
			}
			if stored() {
				t.Fatal("a refused create stored the cluster")
			}
		})
	}

	t.Run("a file", func(t *testing.T) {
		spec := mustKubeup(t, "", create("us-east-1a,us-east-1b", "--dry-run")...)
		file := filepath.Join(t.TempDir(), "aws.yaml")
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(spec, "us-east-1b", "us-east-1x")), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := kubeup(t, "", "--state", state, "create", "-f", file)
		if want := file + `: spec.zones[1]: "us-east-1x" is not a zone of region us-east-1`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("create -f: error %v, want one containing %q", err, want)
		}
		if stored() {
			t.Fatal("a refused create -f stored the cluster")
		}
	})

	closed := httptest.NewServer(nil)
	closed.Close()
	failing := fakeaws.New()
	if err := failing.SetFaults(fakeaws.Faults{ServerErrorRate: 1, Services: []string{"ec2"}}); err != nil {
		t.Fatal(err)
	}
	failingSrv := httptest.NewServer(failing)
	t.Cleanup(failingSrv.Close)
	for _, tt := range []struct {
		name, endpoint string
	}{
		{"no network", closed.URL},
		{"EC2 fails", failingSrv.URL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_ENDPOINT_URL_EC2", tt.endpoint)
			_, stderr, err := kubeup(t, "", create("us-east-1a,us-east-1x", "--dry-run")...)
			if want := "Warning: cluster aws.example.com: spec.zones were not checked against the zones of region us-east-1 ("; err != nil ||
				!strings.Contains(stderr, want) {
				t.Errorf("create --dry-run without AWS: %v, printed on stderr\n%s\nwant a warning %q", err, stderr, want)
			}
		})
	}
}

// create cluster --cloud gce checks the zones against the project's (compute zones.list): a zone it does not have
// is refused at its spec.zones[N], with the zones of its region.
func TestCreateGCEChecksZones(t *testing.T) {
	state := gsState(t)
	args := gceCreate("--nodeup-url", testNodeupURL, "--nodeup-sha256", testNodeupSHA256)
	args[slices.Index(args, "--zones")+1] = "us-central1-a,us-central1-b,us-central1-x"
	_, _, err := kubeup(t, "", append([]string{"--state", state}, args...)...)
	if want := `spec.zones[2]: "us-central1-x" is not a zone of project kubeup-demo (its zones in region us-central1: us-central1-a, ` +
		`us-central1-b, us-central1-c, us-central1-f): name zones of project kubeup-demo`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
	if out, _, _ := kubeup(t, "", "--state", state, "get", "clusters"); strings.Contains(out, "gce.example.com") {
		t.Fatal("a refused create stored the cluster")
	}
}
