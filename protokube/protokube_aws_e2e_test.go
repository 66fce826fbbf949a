//go:build e2e

package protokube

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// TestProtokubeOnAWS: kubeup makes a cluster of three control-plane instances (one Auto Scaling group per zone)
// in the fake AWS (internal/fakeaws, in this process): its six etcd volumes, launch templates whose user data
// names each group's node configuration in the S3 state store, groups, and the placeholder records in the public
// hosted zone. Each instance the groups launched gets its own instance metadata service, and a root whose NVMe
// links show each volume on a loop device of its own. protokube (the binary) runs two rounds on the three
// instances at once, reading its configuration from S3 as the user data names it, then a dry run: each instance
// claims (attaches) the main and the events volume of its zone, formats and mounts them, writes the etcd
// manifests, and the members' and the API's names are in Route53; nothing is mounted twice; the dry run has
// nothing to do.
func TestProtokubeOnAWS(t *testing.T) {
	e2e.RequireRoot(t)
	e2e.RequireTools(t, "losetup", "mkfs.ext4", "blkid")
	ctx := context.Background()
	const cluster, dnsZone, bucket = "demo.example.com", "example.com", "kubeup-state"
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	bin := e2e.BuildBinaries(t, "kubeup.dev/kubeup/cmd/kubeup", "kubeup.dev/kubeup/cmd/protokube-aws")
	dir := t.TempDir()

	f := newAWSAccount(t, dnsZone, bucket, zones...)
	kubeupEnv := append(f.env(t, ""), "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true", "KUBEUP_STATE_STORE=s3://"+bucket+"/clusters")
	for _, args := range [][]string{
		{"create", "cluster", "--name", cluster, "--cloud", "aws", "--zones", strings.Join(zones, ","), "--control-plane-count", "3", "--node-count", "0",
			"--dns-zone", dnsZone, "--vpc", f.vpc, "--subnets", strings.Join(f.subnets, ","),
			"--nodeup-url", "https://example.com/nodeup", "--nodeup-sha256", strings.Repeat("ab", 32)},
		{"update", "cluster", cluster, "--yes"},
	} {
		cmd := exec.Command(filepath.Join(bin, "kubeup"), args...)
		cmd.Env = append(os.Environ(), kubeupEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	type node struct {
		cloudInstance
		nc         *model.NodeConfig
		conf, root string
		env        []string
	}
	var nodes []*node
	var roots []string
	confFlag := regexp.MustCompile(`(?m)^CONF='(s3://[^']+)'$`) // the configuration nodeup reads, as the user data names it
	for _, i := range f.s.Instances() {
		m := confFlag.FindStringSubmatch(i.UserData)
		if m == nil {
			t.Fatalf("instance %s: its user data names no s3:// configuration:\n%s", i.InstanceID, i.UserData)
		}
		n := &node{cloudInstance: cloudInstance{me: volumetasks.Holder{NodeID: i.InstanceID, InternalIP: i.PrivateIP, ExternalIP: i.PublicIP}, zone: i.Zone},
			conf: m[1], root: filepath.Join(dir, "root-"+i.InstanceID)}
		n.env = append(append(os.Environ(), f.env(t, f.imds(t, i.InstanceID))...), "AWS_REGION=us-east-1")
		setenv(t, n.env[len(os.Environ()):])
		nc, err := nodeup.LoadConfig(ctx, n.conf, nodeup.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if nc.Protokube == nil || nc.Protokube.Zone != i.Zone || nc.Protokube.CloudProvider != model.CloudAWS {
			t.Fatalf("%s: not the configuration of an aws control-plane node of %s: %+v", n.conf, i.Zone, nc.Protokube)
		}
		n.nc = nc
		nodes = append(nodes, n)
		roots = append(roots, n.root)
		e2e.SharedMounts(t, n.root) // before the volumes' unmounts below: after them in the cleanup
	}
	if len(nodes) != 3 {
		t.Fatalf("the Auto Scaling groups run %d instances, want 3", len(nodes))
	}
	slices.SortFunc(nodes, func(a, b *node) int { return strings.Compare(a.zone, b.zone) })

	// The etcd volumes kubeup made, each on a loop device of its own, which every instance's root shows as the
	// volume's NVMe link (an instance mounts only what EC2 says is attached to it).
	vols, err := f.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + model.ClusterTagKey(cluster)), Values: []string{model.TagValueOwned}}}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{} // volume id by name
	var ids []string
	for _, v := range vols.Volumes {
		id := aws.ToString(v.VolumeId)
		for _, tag := range v.Tags {
			if aws.ToString(tag.Key) == "Name" {
				byName[aws.ToString(tag.Value)] = id
			}
		}
		ids = append(ids, id)
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
	if len(ids) != 6 || len(byName) != 6 {
		t.Fatalf("kubeup made volumes %v (%v), want 6 (3 members of main and events)", ids, byName)
	}
	spec := nodes[0].nc.Cluster
	watch := e2e.NeverMountedTwice(t, roots...)

	protokube := func(n *node, extra ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, filepath.Join(bin, "protokube-aws"), append([]string{"--conf=" + n.conf, "--root=" + n.root, "--once"}, extra...)...)
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
	mounted := mountPoints(t)
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

	// The members' names point at their instances; the API's keep the placeholder (no kube-apiserver runs).
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
	var instances []cloudInstance
	for _, n := range nodes {
		instances = append(instances, n.cloudInstance)
	}
	checkRecords(t, "Route53", records, wantRecords(cluster, spec, instances))

	// A converged instance's dry run has nothing to do.
	if out, err := protokube(nodes[0], "--dryrun"); err != nil || !strings.Contains(out, "No changes") {
		t.Errorf("protokube --once --dryrun on a converged instance: %v\n%s", err, out)
	}
	if watch.Checks() == 0 {
		t.Error("the mount watch never looked")
	}
}
