package model

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/internal/version"
)

// Defaults of the components, in one place.
const (
	DefaultKubernetesVersion = "1.34.2"
	DefaultEtcdVersion       = "3.5.21"
	defaultRegistry          = "registry.k8s.io"
	defaultVolumeSizeGiB     = 20
	// srvKubernetes holds the control plane's certificates and keys on a node.
	SrvKubernetes = "/srv/kubernetes"
	// apiServerPKI holds kube-apiserver's client certificates and the CAs it verifies others with.
	apiServerPKI = SrvKubernetes + "/kube-apiserver"
	// etcdPKI holds the etcd members' certificates and keys, and the etcd CAs' certificates (never a CA's key).
	EtcdPKI = SrvKubernetes + "/etcd"
	// controllerManagerPKI holds the kubelet CA's certificate and key, with which kube-controller-manager signs
	// kubelets' certificates: the one CA key a node holds (docs/pki.md).
	controllerManagerPKI = SrvKubernetes + "/kube-controller-manager"
	// protokubePKI holds protokube's client certificates: the one that applies kubeup's objects in the cluster,
	// and the CSR approver's.
	protokubePKI = SrvKubernetes + "/protokube"
)

// Complete returns the complete spec: a deep copy of cluster and its instance groups with every value the
// components need filled in. Values the user set are kept. Complete is deterministic and idempotent: completing a
// complete spec changes nothing. It does not validate; call Validate on what it returns.
func Complete(cluster *Cluster, igs []*InstanceGroup) (*Cluster, []*InstanceGroup) {
	c := DeepCopy(cluster)
	groups := make([]*InstanceGroup, len(igs))
	for i, ig := range igs {
		groups[i] = DeepCopy(ig)
		completeInstanceGroup(c, groups[i])
	}
	completeCluster(c, groups)
	return c, groups
}

func DeepCopy[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("model: copying %T: %v", v, err)) // every API type marshals
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("model: copying %T: %v", v, err))
	}
	return &out
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

func ptrDefault[T any](field **T, value T) {
	if *field == nil {
		*field = &value
	}
}

func completeCluster(c *Cluster, igs []*InstanceGroup) {
	setDefault(&c.APIVersion, APIVersion)
	setDefault(&c.Kind, KindCluster)
	name := c.Metadata.Name
	s := &c.Spec

	setDefault(&s.KubernetesVersion, DefaultKubernetesVersion)
	setDefault(&s.DNSZone, parentDomain(name))

	if s.API == nil {
		s.API = &APISpec{}
	}
	setDefault(&s.API.PublicName, "api."+name)
	setDefault(&s.API.InternalName, "api.internal."+name)

	if s.Networking == nil {
		s.Networking = &NetworkingSpec{}
	}
	n := s.Networking
	setDefault(&n.NonMasqueradeCIDR, "100.64.0.0/10")
	setDefault(&n.PodCIDR, "100.96.0.0/11")
	setDefault(&n.ServiceClusterIPRange, "100.64.0.0/13")
	setDefault(&n.ClusterDomain, "cluster.local")
	setDefault(&n.PodNetwork, PodNetworkKubenet)

	if s.EtcdClusters == nil {
		s.EtcdClusters = defaultEtcdClusters(igs)
	}
	for i := range s.EtcdClusters {
		completeEtcdCluster(s, i, igs)
	}

	cm, known := cloudModels[s.CloudProvider]
	if known {
		cm.complete(s)
	}
	if known && cm.fetchesNodeup {
		// The url and the sha256 name one binary: the build's pair is taken whole, or not at all (a url set by
		// hand with the build's sha256 would name another binary than the one it fetches).
		if s.Nodeup == nil {
			s.Nodeup = &NodeupSpec{}
		}
		if s.Nodeup.URL == "" && s.Nodeup.SHA256 == "" {
			s.Nodeup.URL, s.Nodeup.SHA256 = version.NodeupOf(s.CloudProvider)
		}
	}

	completeComponents(c)
	completeContainerd(s)
	completeAddons(s)
	completeAssets(s)
}

// completeLocal defaults spec.local: the pool and the zone file beside a file:// store, and the DNS.
func completeLocal(s *ClusterSpec) {
	if s.Local == nil {
		s.Local = &LocalSpec{}
	}
	if dir, ok := fileStoreDir(s.ConfigBase); ok {
		local := dir + "-local"
		setDefault(&s.Local.PoolDir, path.Join(local, "volumes"))
		setDefault(&s.Local.ZoneFile, path.Join(local, "dns", s.DNSZone+".zone"))
	}
	completeLocalDNS(s.Local)
}

// completeAWSRegion defaults spec.region to the region of the first zone.
func completeAWSRegion(s *ClusterSpec) {
	if s.Region == "" && len(s.Zones) > 0 {
		s.Region = strings.TrimRight(s.Zones[0], "abcdefghijklmnopqrstuvwxyz")
	}
}

// DefaultAPIAccess is who may reach the API of an aws or gce cluster by default: anyone (kube-apiserver authenticates
// every request).
const DefaultAPIAccess = "0.0.0.0/0"

// completeAWS defaults spec.aws: the instance profiles and who may reach the API.
func completeAWS(s *ClusterSpec) {
	if s.AWS == nil {
		s.AWS = &AWSSpec{}
	}
	a := s.AWS
	setDefault(&a.InstanceProfile, DefaultAWSInstanceProfile)
	setDefault(&a.ControlPlaneInstanceProfile, a.InstanceProfile)
	if len(a.APIAccess) == 0 {
		a.APIAccess = []string{DefaultAPIAccess}
	}
}

// completeGCE defaults spec.gce: the service account, who may reach the API, and the region of a subnetwork when
// spec.zones are all of one region.
func completeGCE(s *ClusterSpec) {
	if s.GCE == nil {
		s.GCE = &GCESpec{}
	}
	g := s.GCE
	setDefault(&g.ServiceAccount, DefaultGCEServiceAccount)
	if len(g.APIAccess) == 0 {
		g.APIAccess = []string{DefaultAPIAccess}
	}
	if regions := GCERegions(s.Zones); len(regions) == 1 {
		for i := range g.Subnetworks {
			setDefault(&g.Subnetworks[i].Region, regions[0])
		}
	}
}

// GCERegion is the region of a GCE zone: europe-west1-b -> europe-west1.
func GCERegion(zone string) string {
	if i := strings.LastIndex(zone, "-"); i > 0 {
		return zone[:i]
	}
	return zone
}

// GCERegions are the regions of zones, in the order of their first zone.
func GCERegions(zones []string) []string {
	var out []string
	for _, z := range zones {
		if r := GCERegion(z); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// completeLocalDNS defaults the local DNS provider to the zone file, and the fields of the provider chosen: a
// field of another provider is left as it is, for validation to refuse.
func completeLocalDNS(l *LocalSpec) {
	if l.DNS == nil {
		l.DNS = &LocalDNSSpec{}
	}
	d := l.DNS
	setDefault(&d.Provider, LocalDNSZoneFile)
	switch d.Provider {
	case LocalDNSHosts:
		setDefault(&d.HostsFile, DefaultHostsFile)
	case LocalDNSRFC2136:
		setDefault(&d.TSIGAlgorithm, DefaultTSIGAlgorithm)
	}
}

// parentDomain is the domain a cluster's records go in by default: its name without the first label
// (demo.example.com -> example.com), or the name itself when that would leave a single label.
func parentDomain(name string) string {
	_, rest, ok := strings.Cut(name, ".")
	if !ok || !strings.Contains(rest, ".") {
		return name
	}
	return rest
}

// fileStoreDir returns the store directory of a file:// configBase (file:///tmp/s/demo.example.com -> /tmp/s).
func fileStoreDir(configBase string) (string, bool) {
	p, ok := strings.CutPrefix(configBase, "file://")
	if !ok || !path.IsAbs(p) {
		return "", false
	}
	return path.Dir(path.Clean(p)), true
}

// defaultEtcdClusters gives main and events one member per control-plane instance group, named after the group
// (control-plane-a -> a).
func defaultEtcdClusters(igs []*InstanceGroup) []EtcdClusterSpec {
	var members []EtcdMemberSpec
	for _, ig := range igs {
		if ig.Spec.Role != RoleControlPlane {
			continue
		}
		members = append(members, EtcdMemberSpec{
			Name:          strings.TrimPrefix(ig.Metadata.Name, "control-plane-"),
			InstanceGroup: ig.Metadata.Name,
		})
	}
	slices.SortFunc(members, func(a, b EtcdMemberSpec) int { return strings.Compare(a.Name, b.Name) })
	return []EtcdClusterSpec{
		{Name: "main", Members: members},
		{Name: "events", Members: slices.Clone(members)},
	}
}

func completeEtcdCluster(s *ClusterSpec, i int, igs []*InstanceGroup) {
	e := &s.EtcdClusters[i]
	setDefault(&e.Version, DefaultEtcdVersion)
	setDefault(&e.Image, etcdImage(e.Version))
	switch e.Name {
	case "main":
		setDefault(&e.ClientPort, 4001)
		setDefault(&e.PeerPort, 2380)
		setDefault(&e.MetricsPort, 8081)
	case "events":
		setDefault(&e.ClientPort, 4002)
		setDefault(&e.PeerPort, 2381)
		setDefault(&e.MetricsPort, 8082)
	default: // an extra cluster: ports after main's and events', by position
		setDefault(&e.ClientPort, int32(4003+i))
		setDefault(&e.PeerPort, int32(2382+i))
		setDefault(&e.MetricsPort, int32(8083+i))
	}
	for j := range e.Members {
		m := &e.Members[j]
		if m.InstanceGroup == "" {
			if ig := findInstanceGroup(igs, "control-plane-"+m.Name); ig != nil {
				m.InstanceGroup = ig.Metadata.Name
			}
		}
		if ig := findInstanceGroup(igs, m.InstanceGroup); m.Zone == "" && ig != nil && len(ig.Spec.Zones) == 1 {
			m.Zone = ig.Spec.Zones[0]
		}
		if cm, ok := cloudModels[s.CloudProvider]; ok {
			ptrDefault(&m.VolumeType, cm.volumeType)
			ptrDefault(&m.Encrypted, cm.encrypts)
		}
		ptrDefault(&m.VolumeSize, int32(defaultVolumeSizeGiB))
	}
}

func findInstanceGroup(igs []*InstanceGroup, name string) *InstanceGroup {
	for _, ig := range igs {
		if ig.Metadata.Name == name {
			return ig
		}
	}
	return nil
}

// LocalMachineType and LocalImage are a local instance group's machine type and image: the local provider makes
// no machines, so they are only labels, and no other value is taken (validateLocalInstanceGroup).
const (
	LocalMachineType = "local"
	LocalImage       = "debian-12"
)

func completeInstanceGroup(c *Cluster, ig *InstanceGroup) {
	setDefault(&ig.APIVersion, APIVersion)
	setDefault(&ig.Kind, KindInstanceGroup)
	s := &ig.Spec
	if cm, ok := cloudModels[c.Spec.CloudProvider]; ok {
		setDefault(&s.MachineType, cm.machineType)
		setDefault(&s.Image, cm.image)
	}
	if s.Zones == nil && s.Role == RoleNode {
		s.Zones = slices.Clone(c.Spec.Zones)
	}
	ptrDefault(&s.MinSize, 1)
	ptrDefault(&s.MaxSize, *s.MinSize)
}

func completeComponents(c *Cluster) {
	s := &c.Spec
	n := s.Networking
	image := func(component string) string { return componentImage(component, s.KubernetesVersion) }

	if s.Kubelet == nil {
		s.Kubelet = &KubeletConfig{}
	}
	k := s.Kubelet
	ptrDefault(&k.LogLevel, 2)
	setDefault(&k.Kubeconfig, "/var/lib/kubelet/kubeconfig")
	setDefault(&k.PodManifestPath, "/etc/kubernetes/manifests")
	if dns, ok := NthAddress(n.ServiceClusterIPRange, 10); ok {
		setDefault(&k.ClusterDNS, dns)
	}
	setDefault(&k.ClusterDomain, n.ClusterDomain)
	setDefault(&k.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock")
	setDefault(&k.CgroupDriver, "systemd")
	ptrDefault(&k.AnonymousAuth, false)
	setDefault(&k.AuthorizationMode, "Webhook")
	setDefault(&k.ClientCAFile, SrvKubernetes+"/ca.crt")
	ptrDefault(&k.MaxPods, 110)
	setDefault(&k.BootstrapKubeconfig, "/var/lib/kubelet/bootstrap-kubeconfig")
	setDefault(&k.CertDir, "/var/lib/kubelet/pki")
	ptrDefault(&k.RotateCertificates, true)
	ptrDefault(&k.RotateServerCertificates, true)

	if s.KubeAPIServer == nil {
		s.KubeAPIServer = &KubeAPIServerConfig{}
	}
	a := s.KubeAPIServer
	setDefault(&a.Image, image("kube-apiserver"))
	ptrDefault(&a.LogLevel, 2)
	ptrDefault(&a.SecurePort, 443)
	setDefault(&a.BindAddress, "0.0.0.0")
	if a.EtcdServers == nil || a.EtcdServersOverrides == nil {
		servers, overrides := etcdServers(s.EtcdClusters)
		if a.EtcdServers == nil {
			a.EtcdServers = servers
		}
		if a.EtcdServersOverrides == nil {
			a.EtcdServersOverrides = overrides
		}
	}
	setDefault(&a.StorageBackend, "etcd3")
	setDefault(&a.ServiceClusterIPRange, n.ServiceClusterIPRange)
	ptrDefault(&a.AllowPrivileged, true)
	// Anonymous requests stay allowed, as kube-apiserver's own default and kubeadm have it: RBAC lets them read
	// only /livez, /readyz, /healthz and /version, and the liveness probe (an unauthenticated GET of /livez) needs
	// them. With false, every probe would get 401 and kubelet would restart kube-apiserver forever.
	ptrDefault(&a.AnonymousAuth, true)
	setDefault(&a.AuthorizationMode, "Node,RBAC")
	if a.EnableAdmissionPlugins == nil {
		a.EnableAdmissionPlugins = []string{"NodeRestriction"}
	}
	// The Kubernetes CA and the kubelet CA (kubelets' client certificates): docs/pki.md.
	setDefault(&a.ClientCAFile, apiServerPKI+"/client-ca.crt")
	ptrDefault(&a.EnableBootstrapTokenAuth, true)
	setDefault(&a.KubeletCertificateAuthority, apiServerPKI+"/kubelet-ca.crt")
	setDefault(&a.TLSCertFile, SrvKubernetes+"/server.crt")
	setDefault(&a.TLSPrivateKeyFile, SrvKubernetes+"/server.key")
	setDefault(&a.ServiceAccountIssuer, "https://"+s.API.InternalName)
	setDefault(&a.ServiceAccountKeyFile, SrvKubernetes+"/service-account.pub")
	setDefault(&a.ServiceAccountSigningKeyFile, SrvKubernetes+"/service-account.key")
	setDefault(&a.EtcdCAFile, apiServerPKI+"/etcd-ca.crt")
	setDefault(&a.EtcdCertFile, apiServerPKI+"/etcd-client.crt")
	setDefault(&a.EtcdKeyFile, apiServerPKI+"/etcd-client.key")
	setDefault(&a.KubeletClientCertificate, apiServerPKI+"/kubelet-api.crt")
	setDefault(&a.KubeletClientKey, apiServerPKI+"/kubelet-api.key")
	setDefault(&a.RequestheaderClientCAFile, apiServerPKI+"/front-proxy-ca.crt")
	if a.RequestheaderAllowedNames == nil {
		a.RequestheaderAllowedNames = []string{"front-proxy-client"}
	}
	if a.RequestheaderUsernameHeaders == nil {
		a.RequestheaderUsernameHeaders = []string{"X-Remote-User"}
	}
	if a.RequestheaderGroupHeaders == nil {
		a.RequestheaderGroupHeaders = []string{"X-Remote-Group"}
	}
	if a.RequestheaderExtraHeadersPrefix == nil {
		a.RequestheaderExtraHeadersPrefix = []string{"X-Remote-Extra-"}
	}
	setDefault(&a.ProxyClientCertFile, apiServerPKI+"/front-proxy-client.crt")
	setDefault(&a.ProxyClientKeyFile, apiServerPKI+"/front-proxy-client.key")
	if a.APIAudiences == nil {
		a.APIAudiences = []string{"kubernetes.svc.default"}
	}
	if a.KubeletPreferredAddressTypes == nil {
		a.KubeletPreferredAddressTypes = []string{"InternalIP", "Hostname", "ExternalIP"}
	}

	if s.KubeControllerManager == nil {
		s.KubeControllerManager = &KubeControllerManagerConfig{}
	}
	m := s.KubeControllerManager
	setDefault(&m.Image, image("kube-controller-manager"))
	ptrDefault(&m.LogLevel, 2)
	setDefault(&m.Kubeconfig, "/var/lib/kube-controller-manager/kubeconfig")
	setDefault(&m.ClusterName, c.Metadata.Name)
	setDefault(&m.ClusterCIDR, n.PodCIDR)
	ptrDefault(&m.AllocateNodeCIDRs, true)
	setDefault(&m.ServiceClusterIPRange, n.ServiceClusterIPRange)
	ptrDefault(&m.LeaderElect, true)
	ptrDefault(&m.UseServiceAccountCredentials, true)
	setDefault(&m.ServiceAccountPrivateKeyFile, SrvKubernetes+"/service-account.key")
	setDefault(&m.RootCAFile, SrvKubernetes+"/ca.crt")
	setDefault(&m.ClusterSigningKubeletClientCertFile, controllerManagerPKI+"/kubelet-ca.crt")
	setDefault(&m.ClusterSigningKubeletClientKeyFile, controllerManagerPKI+"/kubelet-ca.key")
	setDefault(&m.ClusterSigningKubeletServingCertFile, controllerManagerPKI+"/kubelet-ca.crt")
	setDefault(&m.ClusterSigningKubeletServingKeyFile, controllerManagerPKI+"/kubelet-ca.key")

	if s.KubeScheduler == nil {
		s.KubeScheduler = &KubeSchedulerConfig{}
	}
	sc := s.KubeScheduler
	setDefault(&sc.Image, image("kube-scheduler"))
	ptrDefault(&sc.LogLevel, 2)
	setDefault(&sc.Kubeconfig, "/var/lib/kube-scheduler/kubeconfig")
	ptrDefault(&sc.LeaderElect, true)
	setDefault(&sc.BindAddress, "127.0.0.1")

	if s.KubeProxy == nil {
		s.KubeProxy = &KubeProxyConfig{}
	}
	p := s.KubeProxy
	setDefault(&p.Image, image("kube-proxy"))
	ptrDefault(&p.LogLevel, 2)
	setDefault(&p.Kubeconfig, "/var/lib/kube-proxy/kubeconfig")
	setDefault(&p.ClusterCIDR, n.PodCIDR)
	setDefault(&p.ProxyMode, "iptables")
	setDefault(&p.MetricsBindAddress, "127.0.0.1:10249")
	ptrDefault(&p.ConntrackMaxPerCore, 131072)
}

// componentImage is a Kubernetes component's default image: registry.k8s.io/<component>:v<version>.
func componentImage(component, version string) string {
	return fmt.Sprintf("%s/%s:v%s", defaultRegistry, component, strings.TrimPrefix(version, "v"))
}

// etcdImage is etcd's default image: registry.k8s.io/etcd:<version>-0.
func etcdImage(version string) string { return fmt.Sprintf("%s/etcd:%s-0", defaultRegistry, version) }

// etcdServers points kube-apiserver at main through localhost, and every other cluster's resources (events) at
// that cluster: the etcd members run on every control-plane node beside kube-apiserver.
func etcdServers(clusters []EtcdClusterSpec) (servers, overrides []string) {
	for _, e := range clusters {
		url := fmt.Sprintf("https://127.0.0.1:%d", e.ClientPort)
		switch e.Name {
		case "main":
			servers = append(servers, url)
		case "events":
			overrides = append(overrides, "/events#"+url)
		}
	}
	return servers, overrides
}

// nthAddress returns the n-th address of a CIDR (100.64.0.0/13, 10 -> 100.64.0.10).
func NthAddress(cidr string, n int) (string, bool) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", false
	}
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	if !p.Contains(a) {
		return "", false
	}
	return a.String(), true
}
