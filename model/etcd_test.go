package model_test

import (
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/internal/golden"
)

// etcdMember returns protokube's configuration on control-plane-b of the 3-control-plane local cluster, with
// the etcd cluster and member named.
func etcdMember(t *testing.T, etcdCluster, member string) (*model.NodeConfig, model.ProtokubeEtcdCluster, model.ProtokubeEtcdMember) {
	t.Helper()
	c, igs := model.CompleteSpec(t, model.CloudLocal, 3)
	c.Spec.EtcdClusters[0].HeartbeatInterval = model.Ptr[int32](250)
	c.Spec.EtcdClusters[0].LogLevel = "warn"
	if err := model.Validate("test", c, igs); err != nil {
		t.Fatal(err)
	}
	nc := model.NewNodeConfig(c, model.Group(igs, "control-plane-b"))
	for _, ec := range nc.Protokube.EtcdClusters {
		for _, m := range ec.Members {
			if ec.Name == etcdCluster && m.Name == member {
				return nc, ec, m
			}
		}
	}
	t.Fatalf("no member %s of etcd cluster %s", member, etcdCluster)
	return nil, model.ProtokubeEtcdCluster{}, model.ProtokubeEtcdMember{}
}

// TestEtcdPodManifest pins the manifest of member b of main, a new cluster.
func TestEtcdPodManifest(t *testing.T) {
	nc, ec, m := etcdMember(t, "main", "b")
	dataDir := model.EtcdDataDir(model.EtcdMountPoint(m.VolumeName))
	p := nodegraph.EtcdPod(nc.Protokube, ec, m, dataDir, false)
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "testdata/etcd-main.manifest.golden", []byte(y))
	if got, want := model.EtcdManifestPath(nc, ec.Name), "/etc/kubernetes/manifests/etcd-main.manifest"; got != want {
		t.Errorf("EtcdManifestPath = %q, want %q", got, want)
	}
	if got := p.Metadata.Name + ".manifest"; got != "etcd-main.manifest" {
		t.Errorf("the pod is named %q: the manifest's file and the pod's name should match", p.Metadata.Name)
	}
}

func TestEtcdPaths(t *testing.T) {
	mount := model.EtcdMountPoint("a.etcd-main.demo.example.com")
	if mount != "/mnt/master-a.etcd-main.demo.example.com" {
		t.Errorf("EtcdMountPoint = %q", mount)
	}
	if got := model.EtcdDataDir(mount); got != "/mnt/master-a.etcd-main.demo.example.com/data" {
		t.Errorf("EtcdDataDir = %q", got)
	}
	nc, _, _ := etcdMember(t, "events", "a")
	nc.Cluster.Spec.Kubelet.PodManifestPath = "/var/lib/kubelet/manifests"
	if got := model.EtcdManifestPath(nc, "events"); got != "/var/lib/kubelet/manifests/etcd-events.manifest" {
		t.Errorf("EtcdManifestPath under another spec.kubelet.podManifestPath = %q", got)
	}
	// Every path reaches a flag, a mount and a manifest as exactly itself.
	for _, p := range []string{mount, model.EtcdDataDir(mount), model.EtcdManifestPath(nc, "events")} {
		if msg := model.PathProblem(p); msg != "" {
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
				"--advertise-client-urls=https://b.etcd-main.internal.demo.example.com:4001",
				"--cert-file=/srv/kubernetes/etcd/main-b-server.crt",
				"--client-cert-auth=true",
				"--data-dir=/mnt/master-b.etcd-main.demo.example.com/data",
				"--heartbeat-interval=250",
				"--initial-advertise-peer-urls=https://b.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster=a=https://a.etcd-main.internal.demo.example.com:2380,b=https://b.etcd-main.internal.demo.example.com:2380,c=https://c.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster-state=new",
				"--initial-cluster-token=demo.example.com-etcd-main",
				"--key-file=/srv/kubernetes/etcd/main-b-server.key",
				"--listen-client-urls=https://0.0.0.0:4001",
				"--listen-metrics-urls=http://127.0.0.1:8081",
				"--listen-peer-urls=https://0.0.0.0:2380",
				"--log-level=warn",
				"--name=b",
				"--peer-cert-file=/srv/kubernetes/etcd/main-b-peer.crt",
				"--peer-client-cert-auth=true",
				"--peer-key-file=/srv/kubernetes/etcd/main-b-peer.key",
				"--peer-trusted-ca-file=/srv/kubernetes/etcd/peers-ca.crt",
				"--trusted-ca-file=/srv/kubernetes/etcd/clients-ca.crt",
			},
		},
		{
			name: "events, member c, existing", etcdCluster: "events", member: "c", existing: true,
			want: []string{
				"--advertise-client-urls=https://c.etcd-events.internal.demo.example.com:4002",
				"--cert-file=/srv/kubernetes/etcd/events-c-server.crt",
				"--client-cert-auth=true",
				"--data-dir=/mnt/master-c.etcd-events.demo.example.com/data",
				"--initial-advertise-peer-urls=https://c.etcd-events.internal.demo.example.com:2381",
				"--initial-cluster=a=https://a.etcd-events.internal.demo.example.com:2381,b=https://b.etcd-events.internal.demo.example.com:2381,c=https://c.etcd-events.internal.demo.example.com:2381",
				"--initial-cluster-state=existing",
				"--initial-cluster-token=demo.example.com-etcd-events",
				"--key-file=/srv/kubernetes/etcd/events-c-server.key",
				"--listen-client-urls=https://0.0.0.0:4002",
				"--listen-metrics-urls=http://127.0.0.1:8082",
				"--listen-peer-urls=https://0.0.0.0:2381",
				"--name=c",
				"--peer-cert-file=/srv/kubernetes/etcd/events-c-peer.crt",
				"--peer-client-cert-auth=true",
				"--peer-key-file=/srv/kubernetes/etcd/events-c-peer.key",
				"--peer-trusted-ca-file=/srv/kubernetes/etcd/peers-ca.crt",
				"--trusted-ca-file=/srv/kubernetes/etcd/clients-ca.crt",
			},
		},
		{
			name: "main, member a, existing", etcdCluster: "main", member: "a", existing: true,
			want: []string{
				"--advertise-client-urls=https://a.etcd-main.internal.demo.example.com:4001",
				"--cert-file=/srv/kubernetes/etcd/main-a-server.crt",
				"--client-cert-auth=true",
				"--data-dir=/mnt/master-a.etcd-main.demo.example.com/data",
				"--heartbeat-interval=250",
				"--initial-advertise-peer-urls=https://a.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster=a=https://a.etcd-main.internal.demo.example.com:2380,b=https://b.etcd-main.internal.demo.example.com:2380,c=https://c.etcd-main.internal.demo.example.com:2380",
				"--initial-cluster-state=existing",
				"--initial-cluster-token=demo.example.com-etcd-main",
				"--key-file=/srv/kubernetes/etcd/main-a-server.key",
				"--listen-client-urls=https://0.0.0.0:4001",
				"--listen-metrics-urls=http://127.0.0.1:8081",
				"--listen-peer-urls=https://0.0.0.0:2380",
				"--log-level=warn",
				"--name=a",
				"--peer-cert-file=/srv/kubernetes/etcd/main-a-peer.crt",
				"--peer-client-cert-auth=true",
				"--peer-key-file=/srv/kubernetes/etcd/main-a-peer.key",
				"--peer-trusted-ca-file=/srv/kubernetes/etcd/peers-ca.crt",
				"--trusted-ca-file=/srv/kubernetes/etcd/clients-ca.crt",
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nc, ec, m := etcdMember(t, tt.etcdCluster, tt.member)
			p := nodegraph.EtcdPod(nc.Protokube, ec, m, model.EtcdDataDir(model.EtcdMountPoint(m.VolumeName)), tt.existing)
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
			// The data directory, read-write and required to exist (on the mounted volume); the certificates'
			// directory, read-only: nothing in the pod may change a key.
			dataDir := model.EtcdDataDir(model.EtcdMountPoint(m.VolumeName))
			type mount struct {
				HostPath, Type, MountPath string
				ReadOnly                  bool
			}
			var mounts []mount
			for _, vm := range c.VolumeMounts {
				mt := mount{MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
				for _, v := range p.Spec.Volumes {
					if v.Name == vm.Name && v.HostPath != nil {
						mt.HostPath, mt.Type = v.HostPath.Path, v.HostPath.Type
					}
				}
				mounts = append(mounts, mt)
			}
			wantMounts := []mount{
				{HostPath: dataDir, Type: "Directory", MountPath: dataDir},
				{HostPath: "/srv/kubernetes/etcd", Type: "DirectoryOrCreate", MountPath: "/srv/kubernetes/etcd", ReadOnly: true},
			}
			if diff := cmp.Diff(wantMounts, mounts); diff != "" || len(p.Spec.Volumes) != len(wantMounts) {
				t.Errorf("mounts (-want +got):\n%s\nvolumes: %+v", diff, p.Spec.Volumes)
			}
			// Every file a flag names is under a mounted directory.
			for _, a := range c.Args {
				name, v, _ := strings.Cut(a, "=")
				if !strings.HasSuffix(name, "-file") {
					continue
				}
				if !strings.HasPrefix(v, "/srv/kubernetes/etcd/") {
					t.Errorf("%s names a file outside the mounted /srv/kubernetes/etcd", a)
				}
			}
			if pr := c.LivenessProbe; pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Port != ec.MetricsPort || pr.HTTPGet.Scheme != "HTTP" ||
				pr.HTTPGet.Host != "127.0.0.1" {
				t.Errorf("liveness probe %+v: want http on 127.0.0.1:%d, the metrics port (the client port asks for a client certificate)", pr, ec.MetricsPort)
			}
			// Each flag once: a cluster-wide flag never repeats a member's.
			names := make([]string, len(c.Args))
			for i, a := range c.Args {
				names[i], _, _ = strings.Cut(a, "=")
			}
			if len(slices.Compact(slices.Clone(names))) != len(names) {
				t.Errorf("a flag is given twice: %s", strings.Join(names, " "))
			}
		})
	}
}
