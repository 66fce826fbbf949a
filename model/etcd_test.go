package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/golden"
)

// etcdMember returns protokube's configuration on control-plane-b of the 3-control-plane local cluster, with
// the etcd cluster and member named.
func etcdMember(t *testing.T, etcdCluster, member string) (*NodeConfig, ProtokubeEtcdCluster, ProtokubeEtcdMember) {
	t.Helper()
	c, igs := completeSpec(t, CloudLocal, 3)
	c.Spec.EtcdClusters[0].HeartbeatInterval = ptr[int32](250)
	c.Spec.EtcdClusters[0].LogLevel = "warn"
	if err := Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	nc := NewNodeConfig(c, group(igs, "control-plane-b"))
	for _, ec := range nc.Protokube.EtcdClusters {
		for _, m := range ec.Members {
			if ec.Name == etcdCluster && m.Name == member {
				return nc, ec, m
			}
		}
	}
	t.Fatalf("no member %s of etcd cluster %s", member, etcdCluster)
	return nil, ProtokubeEtcdCluster{}, ProtokubeEtcdMember{}
}

// TestEtcdPodManifest pins the manifest of member b of main, a new cluster.
func TestEtcdPodManifest(t *testing.T) {
	nc, ec, m := etcdMember(t, "main", "b")
	dataDir := EtcdDataDir(EtcdMountPoint(m.VolumeName))
	p := EtcdPod(nc.Protokube, ec, m, dataDir, false)
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/etcd-main.manifest.golden", []byte(y))
	if got, want := EtcdManifestPath(nc, ec.Name), "/etc/kubernetes/manifests/etcd-main.manifest"; got != want {
		t.Errorf("EtcdManifestPath = %q, want %q", got, want)
	}
	if got := p.Metadata.Name + ".manifest"; got != "etcd-main.manifest" {
		t.Errorf("the pod is named %q: the manifest's file and the pod's name should match", p.Metadata.Name)
	}
}

func TestEtcdPaths(t *testing.T) {
	mount := EtcdMountPoint("a.etcd-main.demo.example.com")
	if mount != "/mnt/master-a.etcd-main.demo.example.com" {
		t.Errorf("EtcdMountPoint = %q", mount)
	}
	if got := EtcdDataDir(mount); got != "/mnt/master-a.etcd-main.demo.example.com/data" {
		t.Errorf("EtcdDataDir = %q", got)
	}
	nc, _, _ := etcdMember(t, "events", "a")
	nc.Cluster.Spec.Kubelet.PodManifestPath = "/var/lib/kubelet/manifests"
	if got := EtcdManifestPath(nc, "events"); got != "/var/lib/kubelet/manifests/etcd-events.manifest" {
		t.Errorf("EtcdManifestPath under another spec.kubelet.podManifestPath = %q", got)
	}
	// Every path reaches a flag, a mount and a manifest as exactly itself.
	for _, p := range []string{mount, EtcdDataDir(mount), EtcdManifestPath(nc, "events")} {
		if msg := pathProblem(p); msg != "" {
			t.Errorf("%s", msg)
		}
	}
}

// TestEtcdPodFlags checks each member's flags: its own name and DNS name, its cluster's ports, every member in
// --initial-cluster, and new versus existing.
func TestEtcdPodFlags(t *testing.T) {
	for _, tt := range []struct {
		name        string
		etcdCluster string
		member      string
		existing    bool
		want        []string
	}{
		{
			name: "main, member b, new", etcdCluster: "main", member: "b",
			want: []string{
				"--advertise-client-urls=http://b.etcd-main.internal.demo.example.com:4001",
				"--data-dir=/mnt/master-b.etcd-main.demo.example.com/data",
				"--heartbeat-interval=250",
				"--initial-advertise-peer-urls=http://b.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster=a=http://a.etcd-main.internal.demo.example.com:2380,b=http://b.etcd-main.internal.demo.example.com:2380,c=http://c.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster-state=new",
				"--initial-cluster-token=demo.example.com-etcd-main",
				"--listen-client-urls=http://0.0.0.0:4001",
				"--listen-peer-urls=http://0.0.0.0:2380",
				"--log-level=warn",
				"--name=b",
			},
		},
		{
			name: "events, member c, existing", etcdCluster: "events", member: "c", existing: true,
			want: []string{
				"--advertise-client-urls=http://c.etcd-events.internal.demo.example.com:4002",
				"--data-dir=/mnt/master-c.etcd-events.demo.example.com/data",
				"--initial-advertise-peer-urls=http://c.etcd-events.internal.demo.example.com:2381",
				"--initial-cluster=a=http://a.etcd-events.internal.demo.example.com:2381,b=http://b.etcd-events.internal.demo.example.com:2381,c=http://c.etcd-events.internal.demo.example.com:2381",
				"--initial-cluster-state=existing",
				"--initial-cluster-token=demo.example.com-etcd-events",
				"--listen-client-urls=http://0.0.0.0:4002",
				"--listen-peer-urls=http://0.0.0.0:2381",
				"--name=c",
			},
		},
		{
			name: "main, member a, existing", etcdCluster: "main", member: "a", existing: true,
			want: []string{
				"--advertise-client-urls=http://a.etcd-main.internal.demo.example.com:4001",
				"--data-dir=/mnt/master-a.etcd-main.demo.example.com/data",
				"--heartbeat-interval=250",
				"--initial-advertise-peer-urls=http://a.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster=a=http://a.etcd-main.internal.demo.example.com:2380,b=http://b.etcd-main.internal.demo.example.com:2380,c=http://c.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster-state=existing",
				"--initial-cluster-token=demo.example.com-etcd-main",
				"--listen-client-urls=http://0.0.0.0:4001",
				"--listen-peer-urls=http://0.0.0.0:2380",
				"--log-level=warn",
				"--name=a",
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nc, ec, m := etcdMember(t, tt.etcdCluster, tt.member)
			p := EtcdPod(nc.Protokube, ec, m, EtcdDataDir(EtcdMountPoint(m.VolumeName)), tt.existing)
			c := p.Spec.Containers[0]
			if diff := cmp.Diff(tt.want, c.Args); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"etcd"}, c.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if p.Metadata.Name != "etcd-"+tt.etcdCluster || !p.Spec.HostNetwork || c.Image != ec.Image {
				t.Errorf("pod %s, host network %v, image %s", p.Metadata.Name, p.Spec.HostNetwork, c.Image)
			}
			dataDir := EtcdDataDir(EtcdMountPoint(m.VolumeName))
			if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].HostPath == nil || p.Spec.Volumes[0].HostPath.Path != dataDir ||
				p.Spec.Volumes[0].HostPath.Type != "Directory" {
				t.Errorf("volumes %+v: want the data directory, required to exist (on the mounted volume)", p.Spec.Volumes)
			}
			if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != dataDir || c.VolumeMounts[0].ReadOnly {
				t.Errorf("volume mounts %+v: want the data directory, read-write, at its own path", c.VolumeMounts)
			}
			// Each flag once: a cluster-wide flag never repeats a member's.
			names := make([]string, len(c.Args))
			for i, a := range c.Args {
				names[i] = flagName(a)
			}
			if len(slices.Compact(slices.Clone(names))) != len(names) {
				t.Errorf("a flag is given twice: %s", strings.Join(names, " "))
			}
		})
	}
}
