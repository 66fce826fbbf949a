package gceprovider

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/cloudup"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/gcetasks"
)

// fakeGCE serves a fake GCE with project p's network "net", its subnetwork "sub" in europe-west1 and a managed
// zone for example.com, made through the SDK as the user would, and points kubeup at it.
func fakeGCE(t *testing.T) *fakegce.Server {
	t.Helper()
	srv := fakegce.New()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	t.Setenv(gcetasks.EndpointEnv, hs.URL+"/")
	ctx := context.Background()
	cs, err := compute.NewService(ctx, option.WithEndpoint(hs.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dns.NewService(ctx, option.WithEndpoint(hs.URL+"/dns/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Networks.Insert("kubeup-demo", &compute.Network{Name: "net", AutoCreateSubnetworks: false, ForceSendFields: []string{"AutoCreateSubnetworks"}}).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Subnetworks.Insert("kubeup-demo", "europe-west1", &compute.Subnetwork{
		Name: "sub", Network: "projects/kubeup-demo/global/networks/net", IpCidrRange: "10.0.0.0/20",
	}).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.ManagedZones.Create("kubeup-demo", &dns.ManagedZone{Name: "example-com", DnsName: "example.com.", Description: "test"}).Do(); err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	return srv
}

func mutatingCalls(srv *fakegce.Server) map[string]int {
	out := map[string]int{}
	for op, n := range srv.Calls() {
		if fakegce.Mutating(op) {
			out[op] = n
		}
	}
	return out
}

// TestGCECluster: a gce cluster's update makes its disks, firewall rules, templates, groups and records in the
// fake GCE; a second update has nothing to do and changes nothing; delete removes what the cluster owns, and
// its state.
func TestGCECluster(t *testing.T) {
	ctx := context.Background()
	srv := fakeGCE(t)
	cs := gsClusters(t)
	c, _ := createDemo(t, cs)
	var out bytes.Buffer
	calls := mutatingCalls(srv)
	for op, want := range map[string]int{
		"compute.disks.insert": 6, "compute.instanceTemplates.insert": 4, "compute.instanceGroupManagers.insert": 6,
		"compute.firewalls.insert": 6,
	} {
		if calls[op] != want {
			t.Errorf("%s: %d calls, want %d (all: %v)", op, calls[op], want, calls)
		}
	}

	srv.ResetCalls()
	out.Reset()
	plan, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out})
	if err != nil || !plan.Empty() {
		t.Errorf("the second update: %v\n%s", err, &out)
	}
	if m := mutatingCalls(srv); len(m) != 0 {
		t.Errorf("the second update changed the cloud: %v", m)
	}

	out.Reset()
	if err := cs.Delete(ctx, demo, cloudup.DeleteOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("delete --yes: %v\n%s", err, &out)
	}
	for _, want := range []string{"Deleted Disk/", "Deleted cluster " + demo} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("delete printed no %q:\n%s", want, &out)
		}
	}
	cloud, err := gcetasks.NewCloud(ctx, "kubeup-demo", demo, "example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	cloud.Region = "europe-west1"
	if left, err := cloud.DeleteOwned(ctx, model.PublishedDNSNames(c), false); err != nil || len(left) != 0 {
		t.Errorf("left after delete: %v %v", left, err)
	}
	if left, _ := cs.Store.List(ctx, ""); len(left) != 0 {
		t.Errorf("left in the store: %v", left)
	}
}

// A change of an instance group's machine type replaces its GCE template: the dry run says "replace" and names
// the template replaced, and lists that template's deletion, which the apply then does and reports (it showed as
// "modify", and the old template was deleted with only a log line). After the apply nothing is left to do.
func TestGCETemplateReplacementIsPlanned(t *testing.T) {
	ctx := context.Background()
	srv := fakeGCE(t)
	cs := gsClusters(t)
	igs := createSmallGCE(t, cs, nil)
	var out bytes.Buffer
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	srv.ResetCalls()
	svc, err := compute.NewService(ctx, option.WithEndpoint(os.Getenv(gcetasks.EndpointEnv)+"compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	templates := func() []string {
		l, err := svc.InstanceTemplates.List("kubeup-demo").Do()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		return names
	}
	var base string
	for _, ig := range igs {
		if ig.Metadata.Name == "nodes" {
			base = InstanceTemplateName(demo, ig, "europe-west1")
		}
	}
	var old string
	for _, n := range templates() {
		if strings.HasPrefix(n, base+"-") {
			old = n
		}
	}
	if old == "" {
		t.Fatalf("no template of %s among %v", base, templates())
	}

	stored, err := cs.Get(ctx, demo)
	if err != nil {
		t.Fatal(err)
	}
	for _, ig := range stored.InstanceGroups {
		if ig.Metadata.Name == "nodes" {
			ig.Spec.MachineType = "e2-standard-4"
		}
	}
	if _, err := cs.Replace(ctx, "test", &model.Objects{Cluster: stored.Cluster, InstanceGroups: stored.InstanceGroups}, cloudup.ReplaceOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Out: &out}); err != nil {
		t.Fatalf("update: %v\n%s", err, &out)
	}
	for _, want := range []string{
		"Will replace resources:\n  InstanceTemplate/" + base + " (replaces " + old + ": instance templates cannot change)\n    MachineType",
		"Will delete resources:\n  InstanceTemplate/" + old + " (no managed instance group of the cluster uses it once the update is applied)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run does not say %q:\n%s", want, &out)
		}
	}
	out.Reset()
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	for _, want := range []string{"  replace InstanceTemplate/" + base + "\n", "  delete InstanceTemplate/" + old + "\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the apply does not report %q:\n%s", want, &out)
		}
	}
	if slices.Contains(templates(), old) {
		t.Errorf("template %s is left after the apply: %v", old, templates())
	}
	out.Reset()
	if plan, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Out: &out}); err != nil || !plan.Empty() {
		t.Errorf("the update after the apply: %v\n%s", err, &out)
	}
}

// A dry run in which a task fails prints the plan of every task that could be planned, saying that it is
// incomplete, then fails with the failure (it printed no plan at all): here the service account does not exist.
func TestGCEFailedDryRunPrintsWhatCouldBePlanned(t *testing.T) {
	ctx := context.Background()
	fakeGCE(t)
	cs := gsClusters(t)
	createSmallGCE(t, cs, func(c *model.Cluster) { c.Spec.GCE.ServiceAccount = "nodes@kubeup-demo.iam.gserviceaccount.com" })
	var out bytes.Buffer
	_, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Out: &out})
	if err == nil || !strings.Contains(err.Error(), "ServiceAccount/nodes@kubeup-demo.iam.gserviceaccount.com") {
		t.Fatalf("update: %v, want the missing service account's failure", err)
	}
	for _, want := range []string{"Will create resources:\n", "  Disk/", "\nThe plan is incomplete: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run printed no %q:\n%s", want, &out)
		}
	}
	if strings.Contains(out.String(), "Must specify --yes") {
		t.Errorf("an incomplete plan says how to apply it:\n%s", &out)
	}
}

// An operator who may not read the machines' service account (no iam.serviceAccounts.get: Google answers 403)
// can still plan and apply: the check is a warning that says what could not be checked, not a failure of the
// service account's task and of every template and group after it.
func TestGCEServiceAccountUnreadableIsAWarning(t *testing.T) {
	ctx := context.Background()
	srv := fakeGCE(t)
	const email = "nodes@kubeup-demo.iam.gserviceaccount.com"
	srv.AddServiceAccount("kubeup-demo", email)
	if err := srv.SetFaults(fakegce.Faults{Denied: []string{"iam.projects.serviceAccounts.get"}}); err != nil {
		t.Fatal(err)
	}
	cs := gsClusters(t)
	createSmallGCE(t, cs, func(c *model.Cluster) { c.Spec.GCE.ServiceAccount = email })
	for _, apply := range []bool{false, true} {
		var out, logs bytes.Buffer
		if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: apply, Out: &out, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
			t.Fatalf("update (apply %t): %v\n%s", apply, err, &out)
		}
		for _, want := range []string{"level=WARN", "task=ServiceAccount/" + email, "service account " + email + " (spec.gce.serviceAccount) could not be checked: you may not read it (iam.serviceAccounts.get"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("update (apply %t) logged no %q:\n%s", apply, want, &logs)
			}
		}
	}
	if calls := mutatingCalls(srv); calls["compute.instanceTemplates.insert"] != 2 {
		t.Errorf("the apply made %d templates, want 2 (calls %v)", calls["compute.instanceTemplates.insert"], calls)
	}
}

// createSmallGCE stores cluster demo on gce with one control-plane machine and one node in europe-west1-b, its
// spec changed by set first (when not nil), and returns its instance groups.
func createSmallGCE(t *testing.T, cs *cloudup.Clusters, set func(c *model.Cluster)) []*model.InstanceGroup {
	t.Helper()
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudGCE, Project: "kubeup-demo",
		Zones: []string{"europe-west1-b"}, ControlPlaneCount: 1, NodeCount: 1,
		Network: "net", Subnetworks: []string{"sub"}, NodeupURL: "https://example.com/nodeup", NodeupSHA256: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(c)
	}
	if err := cs.Create(context.Background(), "create", c, igs); err != nil {
		t.Fatal(err)
	}
	return igs
}

// TestGCERemovedGroupIsPlannedAsDeletions: the dry run after an instance group is deleted from the spec lists its
// managed instance group, each of its templates and its node configuration once, as deletions, also the leftover templates (as a killed
// run leaves) that the cleanup of unused templates would delete as well; the apply deletes them and reports each
// once; then nothing is left to do.
func TestGCERemovedGroupIsPlannedAsDeletions(t *testing.T) {
	ctx := context.Background()
	fakeGCE(t)
	cs := gsClusters(t)
	igs := createSmallGCE(t, cs, nil)
	var out bytes.Buffer
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	svc, err := compute.NewService(ctx, option.WithEndpoint(os.Getenv(gcetasks.EndpointEnv)+"compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	base := InstanceTemplateName(demo, group(igs, "nodes"), "europe-west1")
	l, err := svc.InstanceTemplates.List("kubeup-demo").Do()
	if err != nil {
		t.Fatal(err)
	}
	var current *compute.InstanceTemplate
	for _, it := range l.Items {
		if strings.HasPrefix(it.Name, base+"-") {
			current = it
		}
	}
	if current == nil {
		t.Fatalf("no template of %s", base)
	}
	// Two leftover copies: whichever is the newest, the other is unused, and the cleanup of unused templates
	// lists it too.
	templates := []string{current.Name}
	for _, suffix := range []string{"-00000001", "-00000002"} {
		c := &compute.InstanceTemplate{Name: base + suffix, Properties: current.Properties}
		if _, err := svc.InstanceTemplates.Insert("kubeup-demo", c).Do(); err != nil {
			t.Fatal(err)
		}
		templates = append(templates, c.Name)
	}
	slices.Sort(templates)
	if _, err := cs.DeleteInstanceGroup(ctx, demo, "nodes", true); err != nil {
		t.Fatal(err)
	}

	manager := "InstanceGroupManager/europe-west1-b/" + InstanceGroupManagerName(demo, "nodes", "europe-west1-b")
	want := "Will delete resources:\n  " + manager + " (instance group nodes is no longer in the spec; its machines go with it)\n"
	applied := []string{"  delete " + manager + "\n"}
	for _, n := range templates {
		want += "  InstanceTemplate/" + n + " (instance group nodes is no longer in the spec)\n"
		applied = append(applied, "  delete InstanceTemplate/"+n+"\n")
	}
	// The last group of role Node takes the role's configuration with it.
	want += "  StoreFile/" + demo + "/nodeup/Node.role (no instance group of role Node is left in the spec)\n"
	want += "  StoreFile/" + demo + "/nodeup/nodes (instance group nodes is no longer in the spec)\n"
	applied = append(applied, "  delete StoreFile/"+demo+"/nodeup/Node.role\n", "  delete StoreFile/"+demo+"/nodeup/nodes\n")
	out.Reset()
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Out: &out}); err != nil {
		t.Fatalf("update: %v\n%s", err, &out)
	}
	if got := out.String(); !strings.Contains(got, want+"Must specify --yes") {
		t.Errorf("the dry run does not end with\n%s\nit printed:\n%s", want, got)
	}
	out.Reset()
	if _, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Apply: true, Out: &out}); err != nil {
		t.Fatalf("update --yes: %v\n%s", err, &out)
	}
	for _, w := range applied {
		if n := strings.Count(out.String(), w); n != 1 {
			t.Errorf("the apply reports %q %d times:\n%s", w, n, &out)
		}
	}
	if l, err := svc.InstanceTemplates.List("kubeup-demo").Do(); err != nil {
		t.Fatal(err)
	} else {
		for _, it := range l.Items {
			if strings.HasPrefix(it.Name, base+"-") {
				t.Errorf("template %s is left after the apply", it.Name)
			}
		}
	}
	out.Reset()
	if plan, err := cs.Update(ctx, demo, cloudup.UpdateOptions{Out: &out}); err != nil || !plan.Empty() {
		t.Errorf("the update after the apply: %v\n%s", err, &out)
	}
}
