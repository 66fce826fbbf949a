package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/internal/gcelabels"
)

// The acceptance of the gce provider, as an operator runs it: the kubeup binary against internal/fakegce (and the
// gs:// state store on internal/fakegcs), the cloud's resources read back through Google's Go clients.

const (
	bucket  = "kubeup-state"
	cluster = "gce.example.com"
	project = "p"
	region  = "us-central1"
	network = "kubeup-net"
	subnet  = "kubeup-subnet"
)

var zones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// kubeupBinary is built once, by TestMain.
var kubeupBinary string

func TestMain(m *testing.M) { e2e.MainWithKubeup(m, &kubeupBinary) }

// project is one fake GCP project: the fake, Google's clients pointed at it, and kubeup's environment.
type account struct {
	t       testing.TB
	fake    *fakegce.Server
	env     []string
	compute *compute.Service
	dns     *dns.Service
	gcs     *fakegcs.Server // the state store's bucket
	gcsURL  string
}

// newAccount returns a fake project with a network, a subnetwork in us-central1 and a managed zone for
// example.com, made by Google's Node.js clients, and the state bucket.
func newAccount(t testing.TB) *account { return newProject(t, true) }

// newProject is newAccount, with the network, subnetwork and managed zone made by Google's Node.js clients
// withNode, else by its Go clients (a Node.js process takes seconds of CPU: the fault matrix makes 16 projects).
func newProject(t testing.TB, withNode bool) *account {
	t.Helper()
	ctx := context.Background()
	fake := fakegce.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	store := fakegcs.New(bucket)
	gcs := httptest.NewServer(store)
	t.Cleanup(gcs.Close)
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KUBEUP_") || strings.HasPrefix(k, "GOOGLE_") || strings.HasPrefix(k, "CLOUDSDK_") ||
			k == "HOME" || k == "STORAGE_EMULATOR_HOST" || k == "GCE_METADATA_HOST" {
			continue
		}
		env = append(env, kv)
	}
	endpoint := srv.URL + "/"
	env = append(env, "HOME="+home, "KUBEUP_GCE_ENDPOINT="+endpoint, "STORAGE_EMULATOR_HOST="+gcs.URL,
		"GCE_METADATA_HOST=127.0.0.1:1", "KUBEUP_STATE_STORE=gs://"+bucket+"/clusters")
	a := &account{t: t, fake: fake, env: env, gcs: store, gcsURL: gcs.URL}
	var err error
	if a.compute, err = compute.NewService(ctx, option.WithEndpoint(endpoint+"compute/v1/"), option.WithoutAuthentication()); err != nil {
		t.Fatal(err)
	}
	if a.dns, err = dns.NewService(ctx, option.WithEndpoint(endpoint+"dns/v1/"), option.WithoutAuthentication()); err != nil {
		t.Fatal(err)
	}
	if withNode {
		a.nodeSetUp(srv.URL)
	} else {
		a.goSetUp()
	}
	return a
}

// goSetUp makes what nodeSetUp makes, with Google's Go clients.
func (a *account) goSetUp() {
	a.t.Helper()
	if _, err := a.compute.Networks.Insert(project, &compute.Network{Name: network, AutoCreateSubnetworks: false, ForceSendFields: []string{"AutoCreateSubnetworks"}}).Do(); err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.compute.Subnetworks.Insert(project, region, &compute.Subnetwork{Name: subnet, Network: "projects/" + project + "/global/networks/" + network, IpCidrRange: "10.1.0.0/16"}).Do(); err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.dns.ManagedZones.Create(project, &dns.ManagedZone{Name: "example-com", DnsName: "example.com.", Description: "the acceptance zone"}).Do(); err != nil {
		a.t.Fatal(err)
	}
}

// nodeSetUp makes the network, the subnetwork and the managed zone with Google's Node.js clients
// (testdata/setup.js), from the packages `make npm-deps` installs for internal/fakegce's referee.
func (a *account) nodeSetUp(endpoint string) {
	a.t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		e2e.CannotRun(a.t, "node is not installed: the user's network is made by Google's Node.js clients")
	}
	lock, err := os.ReadFile("../../internal/fakegce/testdata/nodejs/package-lock.json")
	if err != nil {
		a.t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	modules := filepath.Join("/var/cache/kubeup/npm", hex.EncodeToString(sum[:])[:16], "node_modules")
	if c := os.Getenv("KUBEUP_NPM_CACHE"); c != "" {
		modules = filepath.Join(c, "node_modules")
	}
	if _, err := os.Stat(filepath.Join(modules, "@google-cloud", "compute")); err != nil {
		e2e.CannotRun(a.t, "Google's Node.js clients are not installed in %s (`make npm-deps` installs them)", modules)
	}
	cmd := exec.Command(node, "testdata/setup.js", project, region, network, subnet)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + a.t.TempDir(), "NODE_PATH=" + modules, "FAKEGCE_ENDPOINT=" + endpoint}
	if out, err := cmd.CombinedOutput(); err != nil {
		a.t.Fatalf("node testdata/setup.js: %v\n%s", err, out)
	}
}

// mustKubeup runs kubeup and fails the test when it fails.
func (a *account) mustKubeup(args ...string) string {
	a.t.Helper()
	return e2e.Kubeup{T: a.t, Bin: kubeupBinary, Env: a.env}.Must(args...)
}

// createCluster runs the issue's `kubeup create cluster` with the network flags (and the nodeup a test build of
// kubeup carries no sha256 of).
func (a *account) createCluster(name string) {
	a.t.Helper()
	a.mustKubeup("create", "cluster", "--name", name, "--cloud", "gce", "--project", project, "--zones", strings.Join(zones, ","),
		"--control-plane-count", "3", "--dns-zone", "example.com", "--network", network, "--subnetwork", subnet,
		"--nodeup-url", "https://example.com/nodeup", "--nodeup-sha256", strings.Repeat("ab", 32))
}

// owned is what carries the cluster's ownership label: disk, template and group names; firewall rule names.
type owned struct {
	Disks, Templates, Groups, Firewalls []string
}

func (a *account) owned(name string) owned {
	a.t.Helper()
	filter := fmt.Sprintf("labels.%s=%s", gcelabels.ClusterLabelKey(name), gcelabels.OwnedValue)
	var o owned
	for _, z := range zones {
		disks, err := a.compute.Disks.List(project, z).Filter(filter).Do()
		if err != nil {
			a.t.Fatal(err)
		}
		for _, d := range disks.Items {
			o.Disks = append(o.Disks, d.Name)
		}
		groups, err := a.compute.InstanceGroupManagers.List(project, z).Do()
		if err != nil {
			a.t.Fatal(err)
		}
		for _, g := range groups.Items {
			if strings.HasSuffix(g.Name, gcelabels.LabelValue(name)) || strings.Contains(g.Name, strings.ReplaceAll(name, ".", "-")) {
				o.Groups = append(o.Groups, g.Name)
			}
		}
	}
	templates, err := a.compute.InstanceTemplates.List(project).Do()
	if err != nil {
		a.t.Fatal(err)
	}
	for _, tpl := range templates.Items {
		if tpl.Properties != nil && tpl.Properties.Labels[gcelabels.ClusterLabelKey(name)] == gcelabels.OwnedValue {
			o.Templates = append(o.Templates, tpl.Name)
		}
	}
	fws, err := a.compute.Firewalls.List(project).Do()
	if err != nil {
		a.t.Fatal(err)
	}
	for _, fw := range fws.Items {
		if strings.Contains(fw.Name, strings.ReplaceAll(name, ".", "-")) {
			o.Firewalls = append(o.Firewalls, fw.Name)
		}
	}
	return o
}

// records returns the zone's records as "name type" lines.
func (a *account) records() []string {
	a.t.Helper()
	rrs, err := a.dns.ResourceRecordSets.List(project, "example-com").Do()
	if err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, rr := range rrs.Rrsets {
		out = append(out, rr.Name+" "+rr.Type)
	}
	return out
}
