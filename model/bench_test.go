package model_test

import (
	"context"
	"fmt"
	"io"
	"kubeup.dev/kubeup/cloudup/cloudgraph"
	"kubeup.dev/kubeup/model"
	"log/slog"
	"path/filepath"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/localtasks"
)

// membersSpec is a complete local spec whose etcd clusters have members members, one control-plane group each,
// all in one zone: more than Validate takes (1, 3 or 5), to measure how the cost grows with the members.
func membersSpec(b *testing.B, members int) (*model.Cluster, []*model.InstanceGroup) {
	c, igs := model.UserSpec(b, model.CloudLocal, 1)
	for i := 1; i < members; i++ {
		igs = append(igs, model.NewInstanceGroup(fmt.Sprintf("control-plane-a-%d", i), model.RoleControlPlane, []string{"a"}, 1))
	}
	c, igs = model.Complete(c, igs)
	for _, e := range c.Spec.EtcdClusters {
		if len(e.Members) != members {
			b.Fatalf("etcd cluster %s has %d members, want %d", e.Name, len(e.Members), members)
		}
	}
	return c, igs
}

// BenchmarkLocalDryRun is the dry run of a new local cluster's cloud graph (what `kubeup update cluster` runs
// first), by the number of etcd members (one control-plane group each). Its cost is linear in the members: the
// spec and every member's certificates and keys are stored once, in the control-plane role's configuration
// (NodeRoleConfig), and each group's node configuration only names it. (Before, each group's configuration
// carried them all, so M groups encoded, redacted and compared M configurations of O(M) each: 20 members took
// 1.0 s an op, 64 members 30 s and 1.6 GB.) Validate bounds the members all the same: at most MaxEtcdMembers (5).
// Beyond 5 only to show the growth.
func BenchmarkLocalDryRun(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, members := range []int{1, 3, 5, 20, 80} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			c, igs := membersSpec(b, members)
			dir := b.TempDir()
			store := &memStore{Objects: map[string]string{}}
			cloud, err := localtasks.NewCloud(filepath.Join(dir, "pool"), filepath.Join(dir, "dns", c.Spec.DNSZone+".zone"), c.Spec.DNSZone, store)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				g, err := cloudgraph.BuildLocalCloudGraph(c, igs, cloudgraph.LocalCloudState{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := engine.Run(context.Background(), g, cloud, engine.Options{Target: engine.DryRun, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				if err := res.Plan.WriteText(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
