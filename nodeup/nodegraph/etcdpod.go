package nodegraph

import (
	"fmt"
	"kubeup.dev/kubeup/model"
	"slices"
	"strings"

	"kubeup.dev/kubeup/tasks/nodetasks"
)

// EtcdPod is the static pod of member m of etcd cluster ec, on the node of pc that holds the member's volume:
// `etcd` (the binary of the image, and of Debian's etcd-server) with the member's flags from the typed
// configuration, then the cluster's own (ec.Flags), all sorted by name as every component's are:
//
//	--name=<member>  --data-dir=<dataDir>
//	--listen-peer-urls=https://0.0.0.0:<peerPort>  --listen-client-urls=https://0.0.0.0:<clientPort>
//	--initial-advertise-peer-urls=https://<member's DNS name>:<peerPort>
//	--advertise-client-urls=https://<member's DNS name>:<clientPort>
//	--initial-cluster=<m1>=https://<m1's DNS name>:<peerPort>,... (every member, in ec's order)
//	--initial-cluster-state=new|existing  --initial-cluster-token=<cluster name>-etcd-<ec.Name>
//
// existing says the member joins a cluster that already runs (its data directory already holds a member, or
// the others already formed the cluster), else it forms a new one with the others. The member is reached by its
// DNS name, which protokube publishes for the node that holds its volume: the member keeps its name and data
// wherever its volume goes. The pod runs on the host's network, with dataDir (EtcdDataDir) mounted read-write
// at the same path; it must exist, on the mounted volume.
//
// Peers and clients speak TLS, and each side proves who it is with a certificate (EtcdMemberPKI): peers with
// their peer certificates, signed by the etcd peers CA; the member serves clients with its server certificate,
// and accepts only clients whose certificate the etcd clients CA signed (kube-apiserver's). /health and /metrics
// are served over plain http on 127.0.0.1:<metricsPort> only, for kubelet's probe. The certificates are in
// /srv/kubernetes/etcd, mounted read-only.
func EtcdPod(pc *model.ProtokubeConfig, ec model.ProtokubeEtcdCluster, m model.ProtokubeEtcdMember, dataDir string, existing bool) *nodetasks.Pod {
	peerURL := func(host string) string { return fmt.Sprintf("https://%s:%d", host, ec.PeerPort) }
	initial := make([]string, len(ec.Members))
	for i, other := range ec.Members {
		initial[i] = other.Name + "=" + peerURL(other.DNSName)
	}
	pki := model.EtcdMemberPKI(ec.Name, m.Name)
	state := "new"
	if existing {
		state = "existing"
	}
	args := []string{
		"--name=" + m.Name,
		"--data-dir=" + dataDir,
		"--listen-peer-urls=" + peerURL("0.0.0.0"),
		fmt.Sprintf("--listen-client-urls=https://0.0.0.0:%d", ec.ClientPort),
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", ec.MetricsPort),
		"--initial-advertise-peer-urls=" + peerURL(m.DNSName),
		fmt.Sprintf("--advertise-client-urls=https://%s:%d", m.DNSName, ec.ClientPort),
		"--cert-file=" + pki.ServerCert,
		"--key-file=" + pki.ServerKey,
		"--trusted-ca-file=" + model.EtcdClientsCAFile,
		"--client-cert-auth=true",
		"--peer-cert-file=" + pki.PeerCert,
		"--peer-key-file=" + pki.PeerKey,
		"--peer-trusted-ca-file=" + model.EtcdPeersCAFile,
		"--peer-client-cert-auth=true",
		"--initial-cluster=" + strings.Join(initial, ","),
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + pc.ClusterName + "-etcd-" + ec.Name,
	}
	args = append(args, ec.Flags...)
	slices.SortStableFunc(args, func(a, b string) int { return strings.Compare(flagName(a), flagName(b)) })

	cpu := "100m"
	if ec.Name == "main" {
		cpu = "200m" // kube-apiserver's objects: the busier cluster
	}
	name := model.EtcdPodName(ec.Name)
	p := staticPod(name, ec.Image, "etcd", args, cpu)
	c := &p.Spec.Containers[0]
	c.Ports = []nodetasks.ContainerPort{
		{Name: "peer", ContainerPort: ec.PeerPort, HostPort: ec.PeerPort},
		{Name: "client", ContainerPort: ec.ClientPort, HostPort: ec.ClientPort},
	}
	// A serializable health check asks this member only: a member that lost its quorum is not restarted for
	// it, which would not bring the quorum back.
	c.LivenessProbe = &nodetasks.Probe{
		HTTPGet:             &nodetasks.HTTPGetAction{Host: "127.0.0.1", Path: "/health?serializable=true", Port: ec.MetricsPort, Scheme: "HTTP"},
		InitialDelaySeconds: 15, TimeoutSeconds: 15,
	}
	p.Spec.Volumes = []nodetasks.Volume{{Name: "data", HostPath: &nodetasks.HostPathVolumeSource{Path: dataDir, Type: "Directory"}}}
	c.VolumeMounts = []nodetasks.VolumeMount{{Name: "data", MountPath: dataDir}}
	mountHostPaths(p, model.EtcdPKI)
	return p
}

// flagName is the name of a flag --name=value: --name.
func flagName(flag string) string {
	name, _, _ := strings.Cut(flag, "=")
	return name
}
