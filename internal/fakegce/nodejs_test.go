package fakegce

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
)

// nodeModules finds the referee's packages: $KUBEUP_NPM_CACHE/node_modules (the Makefile exports it), else
// /var/cache/kubeup/npm/<first 16 hex digits of package-lock.json's sha256>/node_modules where `make npm-deps`
// puts them, else testdata/nodejs/node_modules (an `npm ci` there).
func nodeModules(t *testing.T) string {
	t.Helper()
	lock, err := os.ReadFile("testdata/nodejs/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	dirs := []string{filepath.Join("/var/cache/kubeup/npm", hex.EncodeToString(sum[:])[:16], "node_modules"), "testdata/nodejs/node_modules"}
	if c := os.Getenv("KUBEUP_NPM_CACHE"); c != "" {
		dirs = append([]string{filepath.Join(c, "node_modules")}, dirs...)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "@google-cloud", "compute", "package.json")); err == nil {
			abs, err := filepath.Abs(d)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	e2e.CannotRun(t, "the Node.js referee's packages are not installed (looked in %s): run `make npm-deps` as root", strings.Join(dirs, ", "))
	return ""
}

// TestNodeJSClients has Google's Node.js clients (@google-cloud/compute over REST, @google-cloud/dns) make and
// list disks with labels, a network and subnetwork, an instance template, a managed instance group, a route to one
// of its instances and a managed zone's records in the fake (testdata/nodejs/referee.js), and checks what they were answered: the fake speaks
// GCE, not only google.golang.org/api's dialect.
func TestNodeJSClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		e2e.CannotRun(t, "node is not installed (Debian's nodejs)")
	}
	modules := nodeModules(t)
	fake := New()
	srv := httptest.NewServer(fake)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound on a hang, not a speed test
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "referee.js")
	cmd.Dir = "testdata/nodejs"
	home := t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "NODE_PATH=" + modules, "FAKEGCE_ENDPOINT=" + srv.URL,
		// No credentials or metadata server of this machine's: the script brings its own token.
		"GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(home, "none.json"), "METADATA_SERVER_DETECTION=none", "NO_PROXY=*"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node referee.js: %v\n%s", err, stderr.String())
	}
	type disk struct {
		Name, SizeGb, SelfLink string
		Labels                 map[string]string
	}
	var got struct {
		Disks      []disk
		Subnetwork struct{ Name, IPCidrRange, Network string }
		Templates  []string
		Group      struct {
			Name             string
			TargetSize       int
			InstanceTemplate string
		}
		Instances     []struct{ Name, IP, StartupScript string }
		TemplateInUse *struct {
			Code    int
			Message string
		}
		Zones           []struct{ Name, DNSName string }
		Records         []string
		DuplicateRecord *struct {
			Code    int
			Message string
		}
		OperationStatuses []string
		Routes            []struct {
			Name, DestRange, NextHopInstance string
			Priority                         int
			Warnings                         []string
		}
		DuplicateRoute, DeletedRoute *struct{ Message string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("decoding the referee's answer %q: %v", stdout.String(), err)
	}

	const base = "https://www.googleapis.com/compute/v1/projects/referee/"
	wantDisks := []disk{
		{Name: "etcd-events-a", SizeGb: "20", SelfLink: base + "zones/us-central1-a/disks/etcd-events-a", Labels: map[string]string{"kubeup-cluster": "c1", "role": "events"}},
		{Name: "etcd-main-a", SizeGb: "20", SelfLink: base + "zones/us-central1-a/disks/etcd-main-a", Labels: map[string]string{"kubeup-cluster": "c1", "role": "main"}},
	}
	if len(got.Disks) != 2 {
		t.Errorf("disks: %+v, want %+v", got.Disks, wantDisks)
	}
	for i := range min(len(got.Disks), 2) {
		g, w := got.Disks[i], wantDisks[i]
		if g.Name != w.Name || g.SizeGb != w.SizeGb || g.SelfLink != w.SelfLink || len(g.Labels) != 2 || g.Labels["role"] != w.Labels["role"] {
			t.Errorf("disk %d: %+v, want %+v", i, g, w)
		}
	}
	if s := got.Subnetwork; s.Name != "sub" || s.IPCidrRange != "10.20.0.0/24" || s.Network != base+"global/networks/net" {
		t.Errorf("subnetwork: %+v", s)
	}
	if !slices.Equal(got.Templates, []string{"nodes-1"}) {
		t.Errorf("templates: %v", got.Templates)
	}
	if g := got.Group; g.Name != "nodes" || g.TargetSize != 2 || g.InstanceTemplate != base+"global/instanceTemplates/nodes-1" {
		t.Errorf("group: %+v", g)
	}
	if len(got.Instances) != 2 {
		t.Errorf("instances: %+v", got.Instances)
	}
	for _, in := range got.Instances {
		if !strings.HasPrefix(in.Name, "nodes-") || len(in.Name) != len("nodes-xxxx") || !strings.HasPrefix(in.IP, "10.20.0.") ||
			in.StartupScript != "#!/bin/sh\necho referee\n" {
			t.Errorf("instance: %+v", in)
		}
	}
	if len(got.Routes) != 1 || got.Routes[0].Name != "pod-100-96-1-0-24-c1" || got.Routes[0].DestRange != "100.96.1.0/24" ||
		got.Routes[0].Priority != 1000 || len(got.Instances) == 0 || got.Routes[0].NextHopInstance != base+"zones/us-central1-a/instances/"+got.Instances[0].Name ||
		len(got.Routes[0].Warnings) != 0 {
		t.Errorf("routes: %+v (the instance forwards: no warning)", got.Routes)
	}
	if e := got.DuplicateRoute; e == nil || !strings.Contains(e.Message, "already exists") {
		t.Errorf("a route inserted twice: %+v", e)
	}
	if e := got.DeletedRoute; e == nil || !strings.Contains(e.Message, "was not found") {
		t.Errorf("a deleted route: %+v", e)
	}
	if e := got.TemplateInUse; e == nil || !strings.Contains(e.Message, "already being used by") {
		t.Errorf("deleting a template in use: %+v", e)
	}
	if len(got.Zones) != 1 || got.Zones[0].Name != "example" || got.Zones[0].DNSName != "example.com." {
		t.Errorf("zones: %+v", got.Zones)
	}
	wantRecords := []string{"api.c1.example.com. A 10.0.0.1", "etcd-a.c1.example.com. A 10.0.0.2", "example.com. NS ", "example.com. SOA "}
	if len(got.Records) != 4 || got.Records[0] != wantRecords[0] || got.Records[1] != wantRecords[1] ||
		!strings.HasPrefix(got.Records[2], wantRecords[2]) || !strings.HasPrefix(got.Records[3], wantRecords[3]) {
		t.Errorf("records: %q, want %q...", got.Records, wantRecords)
	}
	if e := got.DuplicateRecord; e == nil || e.Code != 409 || !strings.Contains(e.Message, "already exists") {
		t.Errorf("a duplicate record: %+v", e)
	}
	if !slices.Equal(got.OperationStatuses, []string{"DONE", "PENDING", "RUNNING"}) {
		t.Errorf("operation statuses seen: %v", got.OperationStatuses)
	}
	calls := fake.Calls()
	for op, want := range map[string]int{"compute.disks.insert": 2, "compute.disks.list": 2, "compute.instanceGroupManagers.insert": 1,
		"compute.instanceTemplates.delete": 1, "dns.managedZones.create": 1, "dns.changes.create": 2} {
		if calls[op] != want {
			t.Errorf("%s: %d calls, want %d (all: %v)", op, calls[op], want, calls)
		}
	}
}
