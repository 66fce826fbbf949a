package model

// The component configurations. Each field with a `flag` tag becomes that command-line flag (see Flags): nil
// pointers, empty strings and empty lists are left out, so that the component's own default applies.

// KubeletConfig configures the kubelet of every node.
type KubeletConfig struct {
	// LogLevel is --v.
	LogLevel *int32 `json:"logLevel,omitempty" flag:"v"`
	// Kubeconfig is the kubeconfig kubelet talks to the API with.
	Kubeconfig string `json:"kubeconfig,omitempty" flag:"kubeconfig"`
	// PodManifestPath is the directory of static-pod manifests.
	PodManifestPath string `json:"podManifestPath,omitempty" flag:"pod-manifest-path"`
	// ClusterDNS is the cluster DNS service's address; defaulted to the 10th address of serviceClusterIPRange.
	ClusterDNS string `json:"clusterDNS,omitempty" flag:"cluster-dns"`
	// ClusterDomain is the cluster's DNS domain; defaulted from spec.networking.clusterDomain.
	ClusterDomain string `json:"clusterDomain,omitempty" flag:"cluster-domain"`
	// ContainerRuntimeEndpoint is the CRI socket.
	ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint,omitempty" flag:"container-runtime-endpoint"`
	// CgroupDriver is systemd or cgroupfs.
	CgroupDriver string `json:"cgroupDriver,omitempty" flag:"cgroup-driver"`
	// AnonymousAuth allows anonymous requests to kubelet's API.
	AnonymousAuth *bool `json:"anonymousAuth,omitempty" flag:"anonymous-auth"`
	// AuthorizationMode is AlwaysAllow or Webhook.
	AuthorizationMode string `json:"authorizationMode,omitempty" flag:"authorization-mode"`
	// ClientCAFile is the CA bundle that signs clients of kubelet's API.
	ClientCAFile string `json:"clientCAFile,omitempty" flag:"client-ca-file"`
	// MaxPods is the most pods a node runs.
	MaxPods *int32 `json:"maxPods,omitempty" flag:"max-pods"`
	// FailSwapOn makes kubelet refuse to start when swap is on.
	FailSwapOn *bool `json:"failSwapOn,omitempty" flag:"fail-swap-on"`
	// NodeLabels are labels kubelet registers its node with.
	NodeLabels map[string]string `json:"nodeLabels,omitempty" flag:"node-labels"`
	// RegisterWithTaints are taints kubelet registers its node with (key=value:Effect).
	RegisterWithTaints []string `json:"registerWithTaints,omitempty" flag:"register-with-taints"`
	// FeatureGates turns features on or off.
	FeatureGates map[string]string `json:"featureGates,omitempty" flag:"feature-gates"`

	// Kubelet credentials (docs/pki.md): kubelet bootstraps with kubeup's bootstrap token, then holds a client
	// certificate of its own node name in CertDir, renews it, and has its serving certificate signed.

	// BootstrapKubeconfig holds kubeup's bootstrap token: kubelet asks for its client certificate with it.
	BootstrapKubeconfig string `json:"bootstrapKubeconfig,omitempty" flag:"bootstrap-kubeconfig"`
	// CertDir is where kubelet keeps its client and serving certificates and keys.
	CertDir string `json:"certDir,omitempty" flag:"cert-dir"`
	// RotateCertificates renews the client certificate before it ends.
	RotateCertificates *bool `json:"rotateCertificates,omitempty" flag:"rotate-certificates"`
	// RotateServerCertificates asks for a serving certificate signed by the cluster (serverTLSBootstrap).
	RotateServerCertificates *bool `json:"rotateServerCertificates,omitempty" flag:"rotate-server-certificates"`
}

// KubeAPIServerConfig configures kube-apiserver.
type KubeAPIServerConfig struct {
	// Image is the container image; defaulted from kubernetesVersion.
	Image string `json:"image,omitempty"`
	// LogLevel is --v.
	LogLevel *int32 `json:"logLevel,omitempty" flag:"v"`
	// SecurePort is the HTTPS port.
	SecurePort *int32 `json:"securePort,omitempty" flag:"secure-port"`
	// BindAddress is the address to listen on.
	BindAddress string `json:"bindAddress,omitempty" flag:"bind-address"`
	// EtcdServers are the main etcd cluster's client URLs; defaulted from spec.etcdClusters.
	EtcdServers []string `json:"etcdServers,omitempty" flag:"etcd-servers"`
	// EtcdServersOverrides send some resources to another etcd cluster (/events#http://127.0.0.1:4002).
	EtcdServersOverrides []string `json:"etcdServersOverrides,omitempty" flag:"etcd-servers-overrides"`
	// StorageBackend is etcd3.
	StorageBackend string `json:"storageBackend,omitempty" flag:"storage-backend"`
	// ServiceClusterIPRange is defaulted from spec.networking.serviceClusterIPRange.
	ServiceClusterIPRange string `json:"serviceClusterIPRange,omitempty" flag:"service-cluster-ip-range"`
	// AllowPrivileged allows privileged containers.
	AllowPrivileged *bool `json:"allowPrivileged,omitempty" flag:"allow-privileged"`
	// AnonymousAuth allows anonymous requests (RBAC limits them to the health and version endpoints). With false,
	// the static pod has no liveness probe: kubelet's probe is anonymous.
	AnonymousAuth *bool `json:"anonymousAuth,omitempty" flag:"anonymous-auth"`
	// AuthorizationMode is a comma-separated list of authorizers: Node,RBAC.
	AuthorizationMode string `json:"authorizationMode,omitempty" flag:"authorization-mode"`
	// EnableAdmissionPlugins are admission plugins to turn on besides the default ones.
	EnableAdmissionPlugins []string `json:"enableAdmissionPlugins,omitempty" flag:"enable-admission-plugins"`
	// ClientCAFile is the CA bundle that signs client certificates.
	ClientCAFile string `json:"clientCAFile,omitempty" flag:"client-ca-file"`
	// TLSCertFile is the serving certificate.
	TLSCertFile string `json:"tlsCertFile,omitempty" flag:"tls-cert-file"`
	// TLSPrivateKeyFile is the serving certificate's key.
	TLSPrivateKeyFile string `json:"tlsPrivateKeyFile,omitempty" flag:"tls-private-key-file"`
	// ServiceAccountIssuer is the issuer of service account tokens; defaulted to https://<api.internalName>.
	ServiceAccountIssuer string `json:"serviceAccountIssuer,omitempty" flag:"service-account-issuer"`
	// ServiceAccountKeyFile verifies service account tokens.
	ServiceAccountKeyFile string `json:"serviceAccountKeyFile,omitempty" flag:"service-account-key-file"`
	// ServiceAccountSigningKeyFile signs service account tokens.
	ServiceAccountSigningKeyFile string `json:"serviceAccountSigningKeyFile,omitempty" flag:"service-account-signing-key-file"`
	// EtcdCAFile verifies etcd's serving certificates (the etcd clients CA).
	EtcdCAFile string `json:"etcdCAFile,omitempty" flag:"etcd-cafile"`
	// EtcdCertFile and EtcdKeyFile are kube-apiserver's client certificate to etcd, and its key.
	EtcdCertFile string `json:"etcdCertFile,omitempty" flag:"etcd-certfile"`
	EtcdKeyFile  string `json:"etcdKeyFile,omitempty" flag:"etcd-keyfile"`
	// KubeletClientCertificate and KubeletClientKey are kube-apiserver's client certificate to kubelets'
	// APIs (logs, exec, port-forward), and its key.
	KubeletClientCertificate string `json:"kubeletClientCertificate,omitempty" flag:"kubelet-client-certificate"`
	KubeletClientKey         string `json:"kubeletClientKey,omitempty" flag:"kubelet-client-key"`
	// RequestheaderClientCAFile verifies the front proxy's client certificate (API aggregation).
	RequestheaderClientCAFile string `json:"requestheaderClientCAFile,omitempty" flag:"requestheader-client-ca-file"`
	// RequestheaderAllowedNames are the front proxy's client certificate's common names.
	RequestheaderAllowedNames []string `json:"requestheaderAllowedNames,omitempty" flag:"requestheader-allowed-names"`
	// RequestheaderUsernameHeaders, RequestheaderGroupHeaders and RequestheaderExtraHeadersPrefix are the
	// headers the front proxy passes the user in.
	RequestheaderUsernameHeaders    []string `json:"requestheaderUsernameHeaders,omitempty" flag:"requestheader-username-headers"`
	RequestheaderGroupHeaders       []string `json:"requestheaderGroupHeaders,omitempty" flag:"requestheader-group-headers"`
	RequestheaderExtraHeadersPrefix []string `json:"requestheaderExtraHeadersPrefix,omitempty" flag:"requestheader-extra-headers-prefix"`
	// ProxyClientCertFile and ProxyClientKeyFile are the front proxy's client certificate, and its key.
	ProxyClientCertFile string `json:"proxyClientCertFile,omitempty" flag:"proxy-client-cert-file"`
	ProxyClientKeyFile  string `json:"proxyClientKeyFile,omitempty" flag:"proxy-client-key-file"`
	// APIAudiences are the audiences tokens must be for.
	APIAudiences []string `json:"apiAudiences,omitempty" flag:"api-audiences"`
	// KubeletPreferredAddressTypes is the order of node address types used to reach kubelets.
	KubeletPreferredAddressTypes []string `json:"kubeletPreferredAddressTypes,omitempty" flag:"kubelet-preferred-address-types"`
	// EnableBootstrapTokenAuth accepts bootstrap tokens (kubelets ask for their certificates with one).
	EnableBootstrapTokenAuth *bool `json:"enableBootstrapTokenAuth,omitempty" flag:"enable-bootstrap-token-auth"`
	// KubeletCertificateAuthority verifies kubelets' serving certificates (the kubelet CA).
	KubeletCertificateAuthority string `json:"kubeletCertificateAuthority,omitempty" flag:"kubelet-certificate-authority"`
	// FeatureGates turns features on or off.
	FeatureGates map[string]string `json:"featureGates,omitempty" flag:"feature-gates"`
}

// KubeControllerManagerConfig configures kube-controller-manager.
type KubeControllerManagerConfig struct {
	// Image is the container image; defaulted from kubernetesVersion.
	Image string `json:"image,omitempty"`
	// LogLevel is --v.
	LogLevel *int32 `json:"logLevel,omitempty" flag:"v"`
	// Kubeconfig is the kubeconfig it talks to the API with.
	Kubeconfig string `json:"kubeconfig,omitempty" flag:"kubeconfig"`
	// ClusterName is the cluster's name, used in cloud resources it creates; defaulted to metadata.name.
	ClusterName string `json:"clusterName,omitempty" flag:"cluster-name"`
	// ClusterCIDR is the pods' range; defaulted from spec.networking.podCIDR.
	ClusterCIDR string `json:"clusterCIDR,omitempty" flag:"cluster-cidr"`
	// AllocateNodeCIDRs gives each node a slice of ClusterCIDR.
	AllocateNodeCIDRs *bool `json:"allocateNodeCIDRs,omitempty" flag:"allocate-node-cidrs"`
	// ServiceClusterIPRange is defaulted from spec.networking.serviceClusterIPRange.
	ServiceClusterIPRange string `json:"serviceClusterIPRange,omitempty" flag:"service-cluster-ip-range"`
	// LeaderElect makes the replicas elect one leader.
	LeaderElect *bool `json:"leaderElect,omitempty" flag:"leader-elect"`
	// UseServiceAccountCredentials gives each controller its own service account.
	UseServiceAccountCredentials *bool `json:"useServiceAccountCredentials,omitempty" flag:"use-service-account-credentials"`
	// ServiceAccountPrivateKeyFile signs service account tokens.
	ServiceAccountPrivateKeyFile string `json:"serviceAccountPrivateKeyFile,omitempty" flag:"service-account-private-key-file"`
	// RootCAFile is the cluster CA put in service account secrets.
	RootCAFile string `json:"rootCAFile,omitempty" flag:"root-ca-file"`
	// ClusterSigningKubeletClientCertFile and ClusterSigningKubeletClientKeyFile sign kubelets' client
	// certificates (kubernetes.io/kube-apiserver-client-kubelet); ClusterSigningKubeletServingCertFile and
	// ClusterSigningKubeletServingKeyFile their serving certificates (kubernetes.io/kubelet-serving): the kubelet CA.
	ClusterSigningKubeletClientCertFile  string `json:"clusterSigningKubeletClientCertFile,omitempty" flag:"cluster-signing-kubelet-client-cert-file"`
	ClusterSigningKubeletClientKeyFile   string `json:"clusterSigningKubeletClientKeyFile,omitempty" flag:"cluster-signing-kubelet-client-key-file"`
	ClusterSigningKubeletServingCertFile string `json:"clusterSigningKubeletServingCertFile,omitempty" flag:"cluster-signing-kubelet-serving-cert-file"`
	ClusterSigningKubeletServingKeyFile  string `json:"clusterSigningKubeletServingKeyFile,omitempty" flag:"cluster-signing-kubelet-serving-key-file"`
	// FeatureGates turns features on or off.
	FeatureGates map[string]string `json:"featureGates,omitempty" flag:"feature-gates"`
}

// KubeSchedulerConfig configures kube-scheduler.
type KubeSchedulerConfig struct {
	// Image is the container image; defaulted from kubernetesVersion.
	Image string `json:"image,omitempty"`
	// LogLevel is --v.
	LogLevel *int32 `json:"logLevel,omitempty" flag:"v"`
	// Kubeconfig is the kubeconfig it talks to the API with.
	Kubeconfig string `json:"kubeconfig,omitempty" flag:"kubeconfig"`
	// LeaderElect makes the replicas elect one leader.
	LeaderElect *bool `json:"leaderElect,omitempty" flag:"leader-elect"`
	// BindAddress is the address its health and metrics endpoints listen on.
	BindAddress string `json:"bindAddress,omitempty" flag:"bind-address"`
	// FeatureGates turns features on or off.
	FeatureGates map[string]string `json:"featureGates,omitempty" flag:"feature-gates"`
}

// KubeProxyConfig configures kube-proxy.
type KubeProxyConfig struct {
	// Image is the container image; defaulted from kubernetesVersion.
	Image string `json:"image,omitempty"`
	// LogLevel is --v.
	LogLevel *int32 `json:"logLevel,omitempty" flag:"v"`
	// Kubeconfig is the kubeconfig it talks to the API with.
	Kubeconfig string `json:"kubeconfig,omitempty" flag:"kubeconfig"`
	// ClusterCIDR is the pods' range; defaulted from spec.networking.podCIDR.
	ClusterCIDR string `json:"clusterCIDR,omitempty" flag:"cluster-cidr"`
	// ProxyMode is iptables, ipvs or nftables.
	ProxyMode string `json:"proxyMode,omitempty" flag:"proxy-mode"`
	// MetricsBindAddress is the metrics endpoint's address.
	MetricsBindAddress string `json:"metricsBindAddress,omitempty" flag:"metrics-bind-address"`
	// ConntrackMaxPerCore is the conntrack table's size per core.
	ConntrackMaxPerCore *int32 `json:"conntrackMaxPerCore,omitempty" flag:"conntrack-max-per-core"`
	// FeatureGates turns features on or off.
	FeatureGates map[string]string `json:"featureGates,omitempty" flag:"feature-gates"`
}
