//go:build e2e

package protokube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/internal/mountinfo"
	"kubeup.dev/kubeup/model"
)

// TestProtokubeOnAWS: three instances of an Auto Scaling group, one per zone, in the fake AWS (internal/fakeaws,
// in this process); six EBS volumes tagged as the cluster's etcd volumes (model.EtcdVolumeTags), each standing on
// a loop device that every instance's root shows as the volume's NVMe link; a public hosted zone. protokube (the
// binary, each with its own instance metadata service) runs two rounds on each instance at once, then a dry run:
// each instance claims (attaches) the main and the events volume of its zone, formats and mounts them, writes the
// etcd manifests, and the members' and the API's names are in Route53; nothing is mounted twice; the dry run
// has nothing to do.
//
// The node configurations are a local cluster's (kubeup update writes them, with their keystore files, without
// a cloud), with protokube's cloud set to aws: protokube reads no more of the spec's cloud than that.
func TestProtokubeOnAWS(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "blkid")
	ctx := context.Background()
	const cluster, dnsZone = "demo.example.com", "example.com"
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube")
	dir := t.TempDir()
	state := "file://" + filepath.Join(dir, "state")
	for _, args := range [][]string{
		{"create", "cluster", "--name", cluster, "--cloud", "local", "--zones", strings.Join(zones, ","), "--control-plane-count", "3", "--node-count", "0", "--dns-zone", dnsZone},
		{"update", "cluster", cluster, "--yes"},
	} {
		if out, err := exec.Command(filepath.Join(bin, "kubeup"), append(args, "--state", state)...).CombinedOutput(); err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	f := newAWSFixture(t, dnsZone, zones...)
	type node struct {
		awsInstance
		nc         *model.NodeConfig
		conf, root string
		env        []string
	}
	var nodes []*node
	for _, i := range f.instances {
		group := "control-plane-" + i.zone[len(i.zone)-1:]
		src := filepath.Join(dir, "state", cluster, "nodeup", group)
		obj, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := model.DecodeNodeConfigObject(src, obj)
		if err != nil {
			t.Fatal(err)
		}
		if nc.Protokube.Zone != i.zone {
			t.Fatalf("%s: protokube's zone is %q, want %s", src, nc.Protokube.Zone, i.zone)
		}
		nc.Protokube.CloudProvider, nc.Protokube.Local = model.CloudAWS, nil
		obj, err = nc.Encode()
		if err != nil {
			t.Fatal(err)
		}
		n := &node{awsInstance: i, nc: nc, conf: filepath.Join(dir, group+".conf"), root: filepath.Join(dir, "root-"+i.me.NodeID)}
		e2e.WriteFile(t, n.conf, string(obj))
		n.env = append(os.Environ(), f.env(t, f.imds(t, i.me.NodeID))...)
		nodes = append(nodes, n)
	}

	// The etcd volumes, as kubeup tags them; each on a loop device of its own, which every instance's root shows
	// as the volume's NVMe link (an instance mounts only what EC2 says is attached to it).
	spec := nodes[0].nc.Cluster
	byName := map[string]string{} // volume id by name
	var ids, roots []string
	for _, n := range nodes {
		roots = append(roots, n.root)
	}
	for _, e := range spec.Spec.EtcdClusters {
		for _, m := range e.Members {
			tags := model.EtcdVolumeTags(cluster, e, m)
			name := model.EtcdVolumeName(cluster, e, m)
			tags["Name"] = name
			id := f.volume(t, m.Zone, tags)
			byName[name], ids = id, append(ids, id)
			dev := e2e.LoopDevice(t, 64<<20)
			for _, root := range roots {
				link := filepath.Join(root, "dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_"+strings.ReplaceAll(id, "-", ""))
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(dev, link); err != nil {
					t.Fatal(err)
				}
				e2e.Unmount(t, filepath.Join(root, model.EtcdMountPoint(id))) // before the loop device's detach
			}
		}
	}
	if len(ids) != 6 {
		t.Fatalf("%d etcd volumes, want 6 (3 members of main and events)", len(ids))
	}
	watch := e2e.NeverMountedTwice(t, roots...)

	protokube := func(n *node, extra ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, filepath.Join(bin, "protokube"), append([]string{"--conf=" + n.conf, "--root=" + n.root, "--once"}, extra...)...)
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

	// Each instance holds the main and the events volume of its zone, attached, mounted, its manifests written.
	out, err := f.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	attached := map[string]string{} // volume id -> instance
	for _, v := range out.Volumes {
		for _, a := range v.Attachments {
			if a.State == "attached" {
				attached[aws.ToString(v.VolumeId)] = aws.ToString(a.InstanceId)
			}
		}
	}
	table, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]bool{}
	for _, line := range strings.Split(string(table), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 {
			mounted[mountinfo.Unescape(fields[4])] = true
		}
	}
	for _, n := range nodes {
		for _, e := range spec.Spec.EtcdClusters {
			i := slices.IndexFunc(e.Members, func(m model.EtcdMemberSpec) bool { return m.Zone == n.zone })
			if i < 0 {
				t.Fatalf("etcd cluster %s has no member in zone %s", e.Name, n.zone)
			}
			id := byName[model.EtcdVolumeName(cluster, e, e.Members[i])]
			if attached[id] != n.me.NodeID {
				t.Errorf("volume %s (%s, %s) is attached to %q, want %s", id, e.Name, n.zone, attached[id], n.me.NodeID)
			}
			if mp := filepath.Join(n.root, model.EtcdMountPoint(id)); !mounted[mp] {
				t.Errorf("%s: nothing is mounted at %s", n.me.NodeID, mp)
			}
			if _, err := os.Stat(filepath.Join(n.root, model.EtcdManifestPath(n.nc, e.Name))); err != nil {
				t.Errorf("%s: etcd %s's manifest: %v", n.me.NodeID, e.Name, err)
			}
		}
	}
	if len(attached) != 6 {
		t.Errorf("attached volumes: %v, want all 6", attached)
	}

	// The members' names point at their instances, the API's at all three.
	records := map[string][]string{}
	zone, err := f.route53.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: aws.String(dnsZone)})
	if err != nil {
		t.Fatal(err)
	}
	p := route53.NewListResourceRecordSetsPaginator(f.route53, &route53.ListResourceRecordSetsInput{HostedZoneId: zone.HostedZones[0].Id})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range page.ResourceRecordSets {
			if rs.Type != r53types.RRTypeA {
				continue
			}
			for _, rr := range rs.ResourceRecords {
				records[strings.TrimSuffix(aws.ToString(rs.Name), ".")] = append(records[strings.TrimSuffix(aws.ToString(rs.Name), ".")], aws.ToString(rr.Value))
			}
		}
	}
	want := map[string][]string{}
	var internal, external []string
	for _, n := range nodes {
		internal, external = append(internal, n.me.InternalIP), append(external, n.me.ExternalIP)
		for _, e := range spec.Spec.EtcdClusters {
			for _, m := range e.Members {
				if m.Zone == n.zone {
					want[fmt.Sprintf("%s.etcd-%s.internal.%s", m.Name, e.Name, cluster)] = []string{n.me.InternalIP}
				}
			}
		}
	}
	slices.Sort(internal)
	slices.Sort(external)
	want["api.internal."+cluster], want["api."+cluster] = internal, external
	for name, values := range records {
		slices.Sort(values)
		records[name] = values
	}
	for name, values := range want {
		if !slices.Equal(records[name], values) {
			t.Errorf("Route53 %s A = %v, want %v", name, records[name], values)
		}
	}

	// A converged instance's dry run has nothing to do.
	if out, err := protokube(nodes[0], "--dryrun"); err != nil || !strings.Contains(out, "No changes") {
		t.Errorf("protokube --once --dryrun on a converged instance: %v\n%s", err, out)
	}
	if watch.Checks() == 0 {
		t.Error("the mount watch never looked")
	}
}
