//go:build e2e

package protokube

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/internal/fakegcs"
	"kubeup.dev/kubeup/internal/gcelabels"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup"
	gceprovider "kubeup.dev/kubeup/providers/gce"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestProtokubeOnGCE is TestProtokubeOnAWS on GCE: kubeup (the binary) makes a cluster of three control-plane
// instances (one managed instance group per zone) in the fake GCE (internal/fakegce, in this process) with its
// state store on the fake GCS (internal/fakegcs): its six etcd disks, instance templates whose startup scripts
// name each group's node configuration in the gs:// state store, groups, and the API's records in the Cloud DNS
// managed zone. Each instance the groups launched gets a metadata server of its own, and a root whose
// /dev/disk/by-id/google-<disk> links show each disk on a loop device of its own. protokube (the binary) runs two
// rounds on the three instances at once, reading its configuration from GCS as the startup script names it, then
// a dry run: each instance claims (attaches) the main and the events disk of its zone, formats and mounts them,
// writes the etcd manifests, and the members' and the API's names are in Cloud DNS; nothing is mounted twice; the
// dry run has nothing to do.
func TestProtokubeOnGCE(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "blkid")
	ctx := context.Background()
	const cluster, dnsZone, bucket = "demo.example.com", "example.com", "kubeup-state"
	const project, region, network, subnet, managedZone = "p", "us-central1", "kubeup-net", "kubeup-subnet", "example-com"
	zones := []string{"us-central1-a", "us-central1-b", "us-central1-c"}
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube-gce")
	dir := t.TempDir()

	// The project: the fake GCE and GCS, and what the user brings (network, subnetwork, managed zone).
	fake := fakegce.New()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	gcs := httptest.NewServer(fakegcs.New(bucket))
	t.Cleanup(gcs.Close)
	endpoint := srv.URL + "/"
	computeSvc, err := compute.NewService(ctx, option.WithEndpoint(endpoint+"compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	dnsSvc, err := dns.NewService(ctx, option.WithEndpoint(endpoint+"dns/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := computeSvc.Networks.Insert(project, &compute.Network{Name: network, ForceSendFields: []string{"AutoCreateSubnetworks"}}).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := computeSvc.Subnetworks.Insert(project, region, &compute.Subnetwork{Name: subnet, Network: "projects/" + project + "/global/networks/" + network, IpCidrRange: "10.1.0.0/16"}).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := dnsSvc.ManagedZones.Create(project, &dns.ManagedZone{Name: managedZone, DnsName: dnsZone + ".", Description: "protokube's e2e zone"}).Do(); err != nil {
		t.Fatal(err)
	}

	// The environment of every process: the fakes, and nothing of this machine's own Google configuration.
	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KUBEUP_") || strings.HasPrefix(k, "GOOGLE_") || strings.HasPrefix(k, "CLOUDSDK_") ||
			k == "HOME" || k == "STORAGE_EMULATOR_HOST" || k == "GCE_METADATA_HOST" {
			continue
		}
		base = append(base, kv)
	}
	fakes := []string{"HOME=" + t.TempDir(), gcetasks.EndpointEnv + "=" + endpoint, "STORAGE_EMULATOR_HOST=" + gcs.URL}
	kubeupEnv := append(append(slices.Clip(base), fakes...), "GCE_METADATA_HOST=127.0.0.1:1", "KUBEUP_STATE_STORE=gs://"+bucket+"/clusters")
	for _, args := range [][]string{
		{"create", "cluster", "--name", cluster, "--cloud", "gce", "--project", project, "--zones", strings.Join(zones, ","),
			"--control-plane-count", "3", "--node-count", "0", "--dns-zone", dnsZone, "--network", network, "--subnetwork", subnet,
			"--nodeup-url", "https://example.com/nodeup", "--nodeup-sha256", strings.Repeat("ab", 32)},
		{"update", "cluster", cluster, "--yes"},
	} {
		cmd := exec.Command(filepath.Join(bin, "kubeup"), args...)
		cmd.Env = kubeupEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	setenv(t, fakes[1:]) // nodeup.LoadConfig, in this process, reads the gs:// configurations

	type node struct {
		cloudInstance
		nc         *model.NodeConfig
		conf, root string
		env        []string
	}
	var nodes []*node
	var roots []string
	confVar := regexp.MustCompile(`(?m)^CONF='(gs://[^']+)'$`) // the configuration nodeup reads, as the startup script names it
	for _, z := range zones {
		list, err := computeSvc.Instances.List(project, z).Do()
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range list.Items {
			var script string
			if i.Metadata != nil {
				for _, it := range i.Metadata.Items {
					if it.Key == "startup-script" && it.Value != nil {
						script = *it.Value
					}
				}
			}
			m := confVar.FindStringSubmatch(script)
			if m == nil {
				t.Fatalf("instance %s: its startup script names no gs:// configuration:\n%s", i.Name, script)
			}
			me := volumetasks.Holder{NodeID: i.Name}
			if len(i.NetworkInterfaces) > 0 {
				me.InternalIP = i.NetworkInterfaces[0].NetworkIP
				if len(i.NetworkInterfaces[0].AccessConfigs) > 0 {
					me.ExternalIP = i.NetworkInterfaces[0].AccessConfigs[0].NatIP
				}
			}
			n := &node{cloudInstance: cloudInstance{me: me, zone: z}, conf: m[1], root: filepath.Join(dir, "root-"+i.Name)}
			md := httptest.NewServer(fake.MetadataHandler(i.Name))
			t.Cleanup(md.Close)
			n.env = append(append(slices.Clip(base), fakes...), "GCE_METADATA_HOST="+strings.TrimPrefix(md.URL, "http://"))
			nc, err := nodeup.LoadConfig(ctx, n.conf, nodeup.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if nc.Protokube == nil || nc.Protokube.Zone != z || nc.Protokube.CloudProvider != model.CloudGCE {
				t.Fatalf("%s: not the configuration of a gce control-plane node of %s: %+v", n.conf, z, nc.Protokube)
			}
			n.nc = nc
			nodes = append(nodes, n)
			roots = append(roots, n.root)
			e2e.SharedMounts(t, n.root) // before the volumes' unmounts below: after them in the cleanup
		}
	}
	if len(nodes) != 3 {
		t.Fatalf("the managed instance groups run %d instances, want 3", len(nodes))
	}
	spec := nodes[0].nc.Cluster

	// The etcd disks kubeup made, each on a loop device of its own, which every instance's root shows as the
	// disk's by-id link (an instance mounts only what GCE says is attached to it).
	var disks []string
	for _, z := range zones {
		list, err := computeSvc.Disks.List(project, z).Filter(fmt.Sprintf("labels.%s=%s", gcelabels.ClusterLabelKey(cluster), gcelabels.OwnedValue)).Do()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Items {
			disks = append(disks, d.Name)
			dev := e2e.LoopDevice(t, 64<<20)
			for _, root := range roots {
				link := filepath.Join(root, "dev/disk/by-id/google-"+d.Name)
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(dev, link); err != nil {
					t.Fatal(err)
				}
				e2e.Unmount(t, filepath.Join(root, model.EtcdMountPoint(d.Name))) // before the loop device's detach
			}
		}
	}
	if len(disks) != 6 {
		t.Fatalf("kubeup made disks %v, want 6 (3 members of main and events)", disks)
	}
	watch := e2e.NeverMountedTwice(t, roots...)

	protokube := func(n *node, extra ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, filepath.Join(bin, "protokube-gce"), append([]string{"--conf=" + n.conf, "--root=" + n.root, "--once"}, extra...)...)
		cmd.Env = n.env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Round 1 attaches, formats and mounts; round 2 writes the manifests and publishes the members' names.
	for round := 1; round <= 2; round++ {
		var wg sync.WaitGroup
		for _, n := range nodes {
			wg.Go(func() {
				if out, err := protokube(n); err != nil {
					t.Errorf("round %d on %s (%s): %v\n%s", round, n.me.NodeID, n.zone, err, out)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}

	// Each instance holds the main and the events disk of its zone, attached, mounted, its manifests written.
	attached := map[string]string{} // disk name -> instance name
	for _, z := range zones {
		list, err := computeSvc.Disks.List(project, z).Do()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Items {
			if len(d.Users) > 1 {
				t.Errorf("disk %s has users %v", d.Name, d.Users)
			}
			for _, u := range d.Users {
				attached[d.Name] = u[strings.LastIndex(u, "/")+1:]
			}
		}
	}
	mounted := mountPoints(t)
	for _, n := range nodes {
		for _, e := range spec.Spec.EtcdClusters {
			i := slices.IndexFunc(e.Members, func(m model.EtcdMemberSpec) bool { return m.Zone == n.zone })
			if i < 0 {
				t.Fatalf("etcd cluster %s has no member in zone %s", e.Name, n.zone)
			}
			name := gceprovider.DiskName(cluster, e, e.Members[i])
			if attached[name] != n.me.NodeID {
				t.Errorf("disk %s (%s, %s) is attached to %q, want %s", name, e.Name, n.zone, attached[name], n.me.NodeID)
			}
			if mp := filepath.Join(n.root, model.EtcdMountPoint(name)); !mounted[mp] {
				t.Errorf("%s: nothing is mounted at %s", n.me.NodeID, mp)
			}
			if _, err := os.Stat(filepath.Join(n.root, model.EtcdManifestPath(n.nc, e.Name))); err != nil {
				t.Errorf("%s: etcd %s's manifest: %v", n.me.NodeID, e.Name, err)
			}
		}
	}
	if len(attached) != 6 {
		t.Errorf("attached disks: %v, want all 6", attached)
	}

	// The members' names point at their instances; the API's keep the placeholder (no kube-apiserver runs).
	records := map[string][]string{}
	err = dnsSvc.ResourceRecordSets.List(project, managedZone).Pages(ctx, func(page *dns.ResourceRecordSetsListResponse) error {
		for _, rs := range page.Rrsets {
			if rs.Type == "A" {
				records[strings.TrimSuffix(rs.Name, ".")] = append(records[strings.TrimSuffix(rs.Name, ".")], rs.Rrdatas...)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var instances []cloudInstance
	for _, n := range nodes {
		instances = append(instances, n.cloudInstance)
	}
	checkRecords(t, "Cloud DNS", records, wantRecords(cluster, spec, instances))

	// A converged instance's dry run has nothing to do.
	if out, err := protokube(nodes[0], "--dryrun"); err != nil || !strings.Contains(out, "No changes") {
		t.Errorf("protokube --once --dryrun on a converged instance: %v\n%s", err, out)
	}
	if watch.Checks() == 0 {
		t.Error("the mount watch never looked")
	}
}
