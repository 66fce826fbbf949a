package model

import "maps"

// APIVersion is the version of every kind this package reads and writes.
const APIVersion = "kubeup.dev/v1alpha1"

// The kinds of the cluster API.
const (
	KindCluster       = "Cluster"
	KindInstanceGroup = "InstanceGroup"
)

// Cloud providers.
const (
	CloudAWS   = "aws"
	CloudGCE   = "gce"
	CloudLocal = "local"
)

// Instance group roles.
const (
	RoleControlPlane = "ControlPlane"
	RoleNode         = "Node"
)

// ObjectMeta names an object of the cluster API.
type ObjectMeta struct {
	// Name is the cluster's DNS name (demo.example.com), or the instance group's name (control-plane-a).
	Name string `json:"name"`
	// Labels are free-form; kubeup interprets only LabelCluster, on an InstanceGroup.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are free-form, except AnnotationComplete.
	Annotations map[string]string `json:"annotations,omitempty"`
	// ResourceVersion is the version of this object (the Cluster, or one InstanceGroup) that it was read at, as
	// kubectl's metadata.resourceVersion: `kubeup get` and `kubeup edit` print it, and `kubeup replace` refuses
	// the object when it is no longer the stored one's (someone changed that object since). It is never stored
	// inside the object, and Complete and Validate ignore it. Empty: not read from the store (a hand-written
	// spec), which replace writes unconditionally.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// AnnotationComplete marks a complete spec, every default filled in, as `kubeup get --full` prints it: not a
// spec to store, since every value derived from another (a component's image from kubernetesVersion) would then
// stay as it is when that other value changes. kubeup refuses to store an object that carries it.
const AnnotationComplete = "kubeup.dev/complete"

// LabelCluster is the label by which an InstanceGroup names its cluster, as kops' kops.k8s.io/cluster does: a
// file of instance groups without their Cluster (kubeup replace -f, create -f) is for the cluster they name.
// `kubeup get instancegroups` prints it on every group; it is not stored (a group is stored inside its cluster's
// spec), and Complete and Validate ignore it.
const LabelCluster = "kubeup.dev/cluster"

// MarkedComplete returns a copy of annotations with AnnotationComplete: the annotations of a complete spec that
// is printed (kubeup get --full) or stored (the state store's cluster-completed.spec), which replace refuses.
func MarkedComplete(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[AnnotationComplete] = "true"
	return out
}

// Cluster is a Kubernetes cluster: where it runs, its control plane's etcd clusters and the configuration of
// its components. Most fields may be left out: defaulting (Complete) fills them in.
type Cluster struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       ClusterSpec `json:"spec"`
}

// ClusterSpec is what the operator asks for.
type ClusterSpec struct {
	// CloudProvider is aws, gce or local.
	CloudProvider string `json:"cloudProvider,omitempty"`
	// Region is the AWS region (aws only); defaulted from the first zone (us-east-1a -> us-east-1).
	Region string `json:"region,omitempty"`
	// Project is the GCP project (gce only).
	Project string `json:"project,omitempty"`
	// Zones are the zones the cluster uses: us-east-1a (aws), europe-west1-b (gce), any short name (local).
	Zones []string `json:"zones,omitempty"`
	// KubernetesVersion is the version of the Kubernetes components, e.g. 1.34.2.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// DNSZone is the DNS zone that holds the cluster's records; defaulted to the cluster name's parent domain.
	DNSZone string `json:"dnsZone,omitempty"`
	// ConfigBase is where the cluster's state lives in the state store (file:///..., s3://..., gs://...).
	// kubeup sets it when it writes the cluster.
	ConfigBase string `json:"configBase,omitempty"`
	// API names the Kubernetes API endpoints.
	API *APISpec `json:"api,omitempty"`
	// Networking holds the cluster's address ranges.
	Networking *NetworkingSpec `json:"networking,omitempty"`
	// EtcdClusters are the etcd clusters of the control plane: main and events by default.
	EtcdClusters []EtcdClusterSpec `json:"etcdClusters,omitempty"`
	// Kubelet configures the kubelet of every node.
	Kubelet *KubeletConfig `json:"kubelet,omitempty"`
	// KubeAPIServer configures kube-apiserver on the control plane.
	KubeAPIServer *KubeAPIServerConfig `json:"kubeAPIServer,omitempty"`
	// KubeControllerManager configures kube-controller-manager on the control plane.
	KubeControllerManager *KubeControllerManagerConfig `json:"kubeControllerManager,omitempty"`
	// KubeScheduler configures kube-scheduler on the control plane.
	KubeScheduler *KubeSchedulerConfig `json:"kubeScheduler,omitempty"`
	// KubeProxy configures kube-proxy on every node.
	KubeProxy *KubeProxyConfig `json:"kubeProxy,omitempty"`
	// Containerd configures containerd, the container runtime of every node.
	Containerd *ContainerdSpec `json:"containerd,omitempty"`
	// Local configures the local cloud provider (cloudProvider: local).
	Local *LocalSpec `json:"local,omitempty"`
	// AWS configures the aws cloud provider (cloudProvider: aws): the network and the instance profiles the
	// cluster uses, and who may reach it.
	AWS *AWSSpec `json:"aws,omitempty"`
	// GCE configures the gce cloud provider (cloudProvider: gce): the network and the service account the
	// cluster uses, and who may reach it.
	GCE *GCESpec `json:"gce,omitempty"`
	// Nodeup is the nodeup binary the machines of an aws or gce cluster fetch at boot (their user data).
	Nodeup *NodeupSpec `json:"nodeup,omitempty"`
	// Assets names every file a node installs (kubelet, the container runtime, the CNI plugins, crictl,
	// protokube) and the images it preloads, each by URL and sha256, and the mirror they come from.
	Assets *AssetsSpec `json:"assets,omitempty"`
	// Addons are the objects kubeup keeps in the cluster through its API (`kubeup update cluster`): CoreDNS.
	Addons *AddonsSpec `json:"addons,omitempty"`
}

// AWSSpec configures the aws cloud provider. The network and the instance profiles are the user's: kubeup checks
// that they exist and match, and never changes them. It creates the security groups.
type AWSSpec struct {
	// VPCID is the VPC the cluster runs in: vpc-0123456789abcdef0.
	VPCID string `json:"vpcID,omitempty"`
	// Subnets are the subnets the machines run in: exactly one per zone of spec.zones.
	Subnets []AWSSubnetSpec `json:"subnets,omitempty"`
	// InstanceProfile is the IAM instance profile of every machine: "kubeup" by default. It must exist.
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// ControlPlaneInstanceProfile is the instance profile of the control-plane machines: instanceProfile by
	// default.
	ControlPlaneInstanceProfile string `json:"controlPlaneInstanceProfile,omitempty"`
	// APIAccess are the IPv4 CIDRs that may reach the Kubernetes API (tcp 443 on the control plane): 0.0.0.0/0
	// by default.
	APIAccess []string `json:"apiAccess,omitempty"`
	// SSHAccess are the IPv4 CIDRs that may reach every machine's ssh (tcp 22): none by default.
	SSHAccess []string `json:"sshAccess,omitempty"`
}

// AWSSubnetSpec is the subnet of one zone.
type AWSSubnetSpec struct {
	// Zone is one of spec.zones: us-east-1a.
	Zone string `json:"zone"`
	// ID is the subnet's id: subnet-0123456789abcdef0.
	ID string `json:"id"`
}

// GCESpec configures the gce cloud provider. The network, its subnetworks and the service account are the
// user's: kubeup checks that the network and subnetworks exist, and never changes them. It creates the firewall
// rules.
type GCESpec struct {
	// Network is the VPC network the cluster runs in, by name: my-network.
	Network string `json:"network,omitempty"`
	// Subnetworks are the subnetworks the machines run in: exactly one per region of spec.zones.
	Subnetworks []GCESubnetworkSpec `json:"subnetworks,omitempty"`
	// ServiceAccount is the service account of every machine, by email, or "default" (the project's Compute
	// Engine default service account), the default.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// APIAccess are the IPv4 CIDRs that may reach the Kubernetes API (tcp 443 on the control plane): 0.0.0.0/0
	// by default.
	APIAccess []string `json:"apiAccess,omitempty"`
	// SSHAccess are the IPv4 CIDRs that may reach every machine's ssh (tcp 22): none by default.
	SSHAccess []string `json:"sshAccess,omitempty"`
}

// GCESubnetworkSpec is the subnetwork of one region.
type GCESubnetworkSpec struct {
	// Region is the region of some of spec.zones: europe-west1. Defaulted when spec.zones are all of one region.
	Region string `json:"region,omitempty"`
	// Name is the subnetwork's name: my-subnetwork.
	Name string `json:"name"`
}

// DefaultGCEServiceAccount is the service account of every machine of a gce cluster by default: the project's
// Compute Engine default service account.
const DefaultGCEServiceAccount = "default"

// DefaultAWSInstanceProfile is the IAM instance profile every machine of an aws cluster gets by default.
const DefaultAWSInstanceProfile = "kubeup"

// NodeupSpec is the nodeup binary a machine fetches at boot, and the sha256 it must have: the machine refuses to
// run any other.
type NodeupSpec struct {
	// URL is where the linux/amd64 nodeup binary is downloaded from: https:// (or http://: the download is not
	// protected in transit, the sha256 check is what protects it). Defaulted from the kubeup build's stamp.
	URL string `json:"url,omitempty"`
	// SHA256 is the binary's sha256 in hex (64 characters). Defaulted from the kubeup build's stamp; a
	// development build has none, and the spec must set it.
	SHA256 string `json:"sha256,omitempty"`
}

// APISpec names the Kubernetes API endpoints. Both names are DNS records in spec.dnsZone.
type APISpec struct {
	// PublicName is the API's name for users: api.<cluster>.
	PublicName string `json:"publicName,omitempty"`
	// InternalName is the API's name for nodes: api.internal.<cluster>.
	InternalName string `json:"internalName,omitempty"`
}

// NetworkingSpec holds the cluster's address ranges.
type NetworkingSpec struct {
	// NonMasqueradeCIDR is the range of in-cluster addresses (pods and services); traffic to it is not
	// masqueraded. It holds podCIDR and serviceClusterIPRange.
	NonMasqueradeCIDR string `json:"nonMasqueradeCIDR,omitempty"`
	// PodCIDR is the range pods' addresses come from.
	PodCIDR string `json:"podCIDR,omitempty"`
	// ServiceClusterIPRange is the range of services' cluster IPs.
	ServiceClusterIPRange string `json:"serviceClusterIPRange,omitempty"`
	// ClusterDomain is the DNS domain of services: cluster.local.
	ClusterDomain string `json:"clusterDomain,omitempty"`
	// PodNetwork is how pods of different nodes reach each other (docs/networking.md): kubenet (the default:
	// each node's range, from kube-controller-manager, routed to that node by every other node) or flannel (the
	// same ranges and bridges, carried between nodes in VXLAN by flannel's DaemonSet, an addon: for networks that
	// do not route the pod ranges between nodes). It cannot be changed once the cluster is applied.
	PodNetwork string `json:"podNetwork,omitempty"`
}

// The pod networks of spec.networking.podNetwork.
const (
	// PodNetworkKubenet is a bridge per node, routes between nodes (protokube's).
	PodNetworkKubenet = "kubenet"
	// PodNetworkFlannel is a bridge per node, VXLAN between nodes (flannel's, spec.addons.flannel).
	PodNetworkFlannel = "flannel"
)

// EtcdClusterSpec is one etcd cluster of the control plane. Its members each live on a volume of their own,
// attached to a control-plane node of the member's instance group.
type EtcdClusterSpec struct {
	// Name is main or events (or another name for an extra cluster).
	Name string `json:"name"`
	// Version is etcd's version, e.g. 3.5.21.
	Version string `json:"version,omitempty"`
	// Image is etcd's container image.
	Image string `json:"image,omitempty"`
	// ClientPort is the port clients (kube-apiserver) use: 4001 for main, 4002 for events.
	ClientPort int32 `json:"clientPort,omitempty"`
	// PeerPort is the port members talk to each other on: 2380 for main, 2381 for events.
	PeerPort int32 `json:"peerPort,omitempty"`
	// MetricsPort is where each member serves /health and /metrics over plain http on 127.0.0.1 only (its
	// client port requires a client certificate): 8081 for main, 8082 for events.
	MetricsPort int32 `json:"metricsPort,omitempty"`
	// HeartbeatInterval is etcd's --heartbeat-interval, in milliseconds.
	HeartbeatInterval *int32 `json:"heartbeatInterval,omitempty" flag:"heartbeat-interval"`
	// ElectionTimeout is etcd's --election-timeout, in milliseconds.
	ElectionTimeout *int32 `json:"electionTimeout,omitempty" flag:"election-timeout"`
	// QuotaBackendBytes is etcd's --quota-backend-bytes.
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty" flag:"quota-backend-bytes"`
	// SnapshotCount is etcd's --snapshot-count.
	SnapshotCount *int64 `json:"snapshotCount,omitempty" flag:"snapshot-count"`
	// LogLevel is etcd's --log-level: debug, info, warn or error.
	LogLevel string `json:"logLevel,omitempty" flag:"log-level"`
	// Members are the cluster's members: an odd number.
	Members []EtcdMemberSpec `json:"members,omitempty"`
}

// EtcdMemberSpec is one member of an etcd cluster and the volume that holds its data.
type EtcdMemberSpec struct {
	// Name is the member's name, usually its zone: a.
	Name string `json:"name"`
	// InstanceGroup is the control-plane instance group whose node runs the member.
	InstanceGroup string `json:"instanceGroup,omitempty"`
	// Zone is the zone of the member's volume; defaulted from its instance group (which must have one zone).
	Zone string `json:"zone,omitempty"`
	// VolumeType is the volume's type: gp3 (aws), pd-ssd (gce), sparse (local).
	VolumeType *string `json:"volumeType,omitempty"`
	// VolumeSize is the volume's size in GiB.
	VolumeSize *int32 `json:"volumeSize,omitempty"`
	// Encrypted says whether the volume is encrypted at rest (aws, gce; the local provider cannot).
	Encrypted *bool `json:"encrypted,omitempty"`
}

// LocalSpec configures the local cloud provider: volumes are sparse disk images in a pool directory; DNS
// records live in a zone file, a hosts file or a DNS server that takes RFC 2136 updates (DNS).
type LocalSpec struct {
	// PoolDir holds the volumes; defaulted beside a file:// state store (<store>-local/volumes).
	PoolDir string `json:"poolDir,omitempty"`
	// ZoneFile is the DNS zone file kubeup manages; defaulted to <store>-local/dns/<dnsZone>.zone. `kubeup
	// update cluster` writes the API's placeholder records there whatever DNS.Provider is; protokube publishes
	// there when DNS.Provider is zonefile.
	ZoneFile string `json:"zoneFile,omitempty"`
	// DNS is the DNS provider protokube publishes the etcd members' and the API's records with; defaulted to
	// the zone file.
	DNS *LocalDNSSpec `json:"dns,omitempty"`
}

// DNS providers of the local cloud provider (spec.local.dns.provider).
const (
	// LocalDNSZoneFile keeps the records in spec.local.zoneFile, an RFC 1035 master file a DNS server may load.
	LocalDNSZoneFile = "zonefile"
	// LocalDNSHosts keeps the records in a managed block of a hosts file (hostsFile): name resolution on one
	// machine, without a DNS server.
	LocalDNSHosts = "hosts"
	// LocalDNSRFC2136 sends RFC 2136 dynamic updates, signed with TSIG, to a DNS server (BIND, Knot, PowerDNS).
	LocalDNSRFC2136 = "rfc2136"
)

// Defaults of spec.local.dns.
const (
	DefaultHostsFile     = "/etc/hosts"
	DefaultTSIGAlgorithm = "hmac-sha256"
)

// LocalDNSSpec is the DNS provider of the local cloud provider. Each provider reads only its own fields; the
// others must be left out.
type LocalDNSSpec struct {
	// Provider is zonefile (the default: spec.local.zoneFile), hosts or rfc2136.
	Provider string `json:"provider,omitempty"`
	// HostsFile is the hosts file (provider hosts), an absolute path on the node: /etc/hosts by default.
	HostsFile string `json:"hostsFile,omitempty"`
	// Server is the DNS server's address, host:port (provider rfc2136), for example 192.0.2.53:53.
	Server string `json:"server,omitempty"`
	// TSIGKeyName is the name of the TSIG key the updates are signed with (provider rfc2136).
	TSIGKeyName string `json:"tsigKeyName,omitempty"`
	// TSIGAlgorithm is the TSIG key's algorithm (provider rfc2136): hmac-sha256 by default.
	TSIGAlgorithm string `json:"tsigAlgorithm,omitempty"`
	// TSIGSecretFile is the absolute path, on the node, of a file holding the TSIG key's secret in base64
	// (provider rfc2136). The secret itself is never in the spec: the spec is stored, printed and copied to
	// every node.
	TSIGSecretFile string `json:"tsigSecretFile,omitempty"`
}

// InstanceGroup is a group of machines with one role, machine type and image.
type InstanceGroup struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Spec       InstanceGroupSpec `json:"spec"`
}

// InstanceGroupSpec is what the operator asks of an instance group.
type InstanceGroupSpec struct {
	// Role is ControlPlane or Node.
	Role string `json:"role"`
	// Zones are the zones the group's machines run in, a subset of the cluster's; a control-plane group has one.
	Zones []string `json:"zones,omitempty"`
	// MachineType is the cloud's machine type: t3.medium (aws), e2-standard-2 (gce), local.
	MachineType string `json:"machineType,omitempty"`
	// Image is the machine image: an AMI name or id, a GCE image, or a name on the local provider.
	Image string `json:"image,omitempty"`
	// MinSize is the group's smallest size.
	MinSize *int32 `json:"minSize,omitempty"`
	// MaxSize is the group's largest size.
	MaxSize *int32 `json:"maxSize,omitempty"`
}
