package model

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// validateComponents checks the configuration of each component: every field by its own rule (values.go), so
// that a value reaches the component as the one flag it is meant to be. A field that holds the value of the
// field it is defaulted from (kube-proxy's clusterCIDR and spec.networking.podCIDR) is not checked again: a
// problem with that value is reported once, at the field it came from.
func validateComponents(ps *problems, c *Cluster) {
	s := &c.Spec
	var n NetworkingSpec
	if s.Networking != nil {
		n = *s.Networking
	}
	var internalName string
	if s.API != nil {
		internalName = s.API.InternalName
	}
	image := func(p, v, component string) {
		if v == "" || v != componentImage(component, s.KubernetesVersion) {
			check(ps, p, imageProblem(v))
		}
	}
	cidr := func(p, v, from string) {
		if v != from {
			checkIf(ps, p, v, cidrProblem)
		}
	}
	if k := s.Kubelet; k != nil {
		validateKubelet(ps, k, n.ClusterDomain)
	}
	if a := s.KubeAPIServer; a != nil {
		const p = "spec.kubeAPIServer"
		image(p+".image", a.Image, "kube-apiserver")
		cidr(p+".serviceClusterIPRange", a.ServiceClusterIPRange, n.ServiceClusterIPRange)
		if a.ServiceAccountIssuer != "https://"+internalName {
			checkIf(ps, p+".serviceAccountIssuer", a.ServiceAccountIssuer, issuerProblem)
		}
		validateKubeAPIServer(ps, a)
	}
	if m := s.KubeControllerManager; m != nil {
		const p = "spec.kubeControllerManager"
		image(p+".image", m.Image, "kube-controller-manager")
		validateLogLevel(ps, p+".logLevel", m.LogLevel)
		validatePodKubeconfig(ps, p+".kubeconfig", m.Kubeconfig)
		if m.ClusterName != "" && m.ClusterName != c.Metadata.Name {
			check(ps, p+".clusterName", validDNSName(m.ClusterName, 1))
		}
		cidr(p+".clusterCIDR", m.ClusterCIDR, n.PodCIDR)
		cidr(p+".serviceClusterIPRange", m.ServiceClusterIPRange, n.ServiceClusterIPRange)
		validateFeatureGates(ps, p+".featureGates", m.FeatureGates)
	}
	if sc := s.KubeScheduler; sc != nil {
		const p = "spec.kubeScheduler"
		image(p+".image", sc.Image, "kube-scheduler")
		validateLogLevel(ps, p+".logLevel", sc.LogLevel)
		validatePodKubeconfig(ps, p+".kubeconfig", sc.Kubeconfig)
		checkIf(ps, p+".bindAddress", sc.BindAddress, ipProblem)
		validateFeatureGates(ps, p+".featureGates", sc.FeatureGates)
	}
	if x := s.KubeProxy; x != nil {
		const p = "spec.kubeProxy"
		image(p+".image", x.Image, "kube-proxy")
		validateLogLevel(ps, p+".logLevel", x.LogLevel)
		validatePodKubeconfig(ps, p+".kubeconfig", x.Kubeconfig)
		cidr(p+".clusterCIDR", x.ClusterCIDR, n.PodCIDR)
		if x.ProxyMode != "" {
			check(ps, p+".proxyMode", oneOf(x.ProxyMode, "iptables", "ipvs", "nftables"))
		}
		checkIf(ps, p+".metricsBindAddress", x.MetricsBindAddress, bindAddressProblem)
		if x.ConntrackMaxPerCore != nil && *x.ConntrackMaxPerCore < 0 {
			ps.add(p+".conntrackMaxPerCore", "%d: must not be negative (0 leaves the kernel's value)", *x.ConntrackMaxPerCore)
		}
		validateFeatureGates(ps, p+".featureGates", x.FeatureGates)
	}
	validateKeystoreFiles(ps, s)
}

func validateKubelet(ps *problems, k *KubeletConfig, clusterDomain string) {
	const p = "spec.kubelet"
	validateLogLevel(ps, p+".logLevel", k.LogLevel)
	validateNodePath(ps, p+".kubeconfig", k.Kubeconfig, true)
	validateNodePath(ps, p+".podManifestPath", k.PodManifestPath, true)
	validateNodePath(ps, p+".certDir", k.CertDir, false)
	checkIf(ps, p+".clusterDNS", k.ClusterDNS, ipProblem)
	if k.ClusterDomain != "" && k.ClusterDomain != clusterDomain {
		check(ps, p+".clusterDomain", validDNSName(k.ClusterDomain, 1))
	}
	if e := k.ContainerRuntimeEndpoint; e != "" {
		if sock, ok := strings.CutPrefix(e, "unix://"); !ok || pathProblem(sock) != "" {
			ps.add(p+".containerRuntimeEndpoint", "%q is not a unix:// socket: want unix:// and an absolute path of letters, digits and %s (for example unix:///run/containerd/containerd.sock)",
				e, strings.Join(strings.Split(pathChars, ""), " "))
		}
	}
	if k.CgroupDriver != "" {
		check(ps, p+".cgroupDriver", oneOf(k.CgroupDriver, "systemd", "cgroupfs"))
	}
	if k.AuthorizationMode != "" {
		check(ps, p+".authorizationMode", oneOf(k.AuthorizationMode, "Webhook", "AlwaysAllow"))
	}
	if k.MaxPods != nil && *k.MaxPods < 1 {
		ps.add(p+".maxPods", "%d: must be at least 1", *k.MaxPods)
	}
	for _, key := range slices.Sorted(maps.Keys(k.NodeLabels)) {
		lp := mapPath(p+".nodeLabels", key)
		if msg := labelKeyProblem(key); msg != "" {
			ps.add(lp, "%s", msg)
		} else if !kubeletLabelAllowed(key) {
			ps.add(lp, "kubelet refuses to start with a label in the kubernetes.io or k8s.io namespaces "+
				"unless it is in node.kubernetes.io/ or kubelet.kubernetes.io/, or one of %v: use your own prefix, or label the Node once it has registered",
				slices.Sorted(maps.Keys(kubeletLabels)))
		}
		check(ps, lp, labelValueProblem(k.NodeLabels[key]))
	}
	for i, taint := range k.RegisterWithTaints {
		check(ps, Index(p+".registerWithTaints", i), taintProblem(taint))
	}
	validateFeatureGates(ps, p+".featureGates", k.FeatureGates)
}

// validateKubeAPIServer checks what validateComponents does not.
func validateKubeAPIServer(ps *problems, a *KubeAPIServerConfig) {
	const p = "spec.kubeAPIServer"
	validateLogLevel(ps, p+".logLevel", a.LogLevel)
	if a.SecurePort != nil && (*a.SecurePort < 1 || *a.SecurePort > 65535) {
		ps.add(p+".securePort", "%d is not a port: want 1-65535", *a.SecurePort)
	}
	checkIf(ps, p+".bindAddress", a.BindAddress, ipProblem)
	if len(a.EtcdServers) == 0 {
		ps.add(p+".etcdServers", "required: the main etcd cluster's client URLs")
	}
	for i, u := range a.EtcdServers {
		check(ps, Index(p+".etcdServers", i), hostPortURLProblem(u, "http", "https"))
	}
	for i, o := range a.EtcdServersOverrides {
		check(ps, Index(p+".etcdServersOverrides", i), etcdOverrideProblem(o))
	}
	if a.StorageBackend != "" {
		check(ps, p+".storageBackend", oneOf(a.StorageBackend, "etcd3"))
	}
	if a.AuthorizationMode != "" {
		modes := strings.Split(a.AuthorizationMode, ",")
		for i, m := range modes {
			switch {
			case !slices.Contains(authorizationModes, m):
				ps.add(p+".authorizationMode", "%q: %q is not an authorization mode: want a comma-separated list of %s", a.AuthorizationMode, m, strings.Join(authorizationModes, ", "))
			case slices.Index(modes, m) < i:
				ps.add(p+".authorizationMode", "%q lists %s twice", a.AuthorizationMode, m)
			}
		}
	}
	for i, plugin := range a.EnableAdmissionPlugins {
		if !identifier.MatchString(plugin) {
			ps.add(Index(p+".enableAdmissionPlugins", i), "%q is not an admission plugin's name: want letters and digits, starting with a letter (for example NodeRestriction)", plugin)
		}
	}
	for _, l := range []struct {
		field string
		words []string
	}{
		{"requestheaderAllowedNames", a.RequestheaderAllowedNames},
		{"requestheaderUsernameHeaders", a.RequestheaderUsernameHeaders},
		{"requestheaderGroupHeaders", a.RequestheaderGroupHeaders},
		{"requestheaderExtraHeadersPrefix", a.RequestheaderExtraHeadersPrefix},
	} {
		for i, w := range l.words {
			if !headerWord.MatchString(w) {
				ps.add(Index(p+"."+l.field, i), "%q: want letters, digits, '-', '_', ':' and '.', starting with a letter or digit", w)
			}
		}
	}
	for i, aud := range a.APIAudiences {
		if !audience.MatchString(aud) {
			ps.add(Index(p+".apiAudiences", i), "%q is not an audience: want letters, digits and . _ : / -, starting with a letter or digit (for example kubernetes.svc.default)", aud)
		}
	}
	for i, t := range a.KubeletPreferredAddressTypes {
		tp := Index(p+".kubeletPreferredAddressTypes", i)
		if msg := oneOf(t, nodeAddressTypes...); msg != "" {
			ps.add(tp, "%s", msg)
		} else if slices.Index(a.KubeletPreferredAddressTypes, t) < i {
			ps.add(tp, "%q is listed twice", t)
		}
	}
	validateFeatureGates(ps, p+".featureGates", a.FeatureGates)
}

var (
	authorizationModes = []string{"AlwaysAllow", "AlwaysDeny", "ABAC", "Webhook", "RBAC", "Node"}
	nodeAddressTypes   = []string{"Hostname", "InternalIP", "ExternalIP", "InternalDNS", "ExternalDNS"}
)

func validateLogLevel(ps *problems, p string, v *int32) {
	if v != nil && (*v < 0 || *v > 10) {
		ps.add(p, "%d is not a log level: want 0-10", *v)
	}
}

// validatePodKubeconfig checks the kubeconfig of a component that runs as a static pod: a path whose directory
// is mounted into the pod, in a directory kubeup owns on the node (so never the root directory).
func validatePodKubeconfig(ps *problems, p, v string) {
	validateNodePath(ps, p, v, true)
}

// bindAddressProblem checks an address to listen on: IP:PORT, or an IP alone.
func bindAddressProblem(v string) string {
	if ipProblem(v) == "" {
		return ""
	}
	if ap, err := netip.ParseAddrPort(v); err == nil && ap.Port() != 0 && ap.Addr().Zone() == "" {
		return ""
	}
	return fmt.Sprintf("%q is not an address to listen on: want IP:PORT, for example 127.0.0.1:10249", v)
}

// check adds msg as a problem at p unless it is empty; checkIf checks a value that may be left out.
func check(ps *problems, p, msg string) {
	if msg != "" {
		ps.add(p, "%s", msg)
	}
}

func checkIf(ps *problems, p, v string, rule func(string) string) {
	if v != "" {
		check(ps, p, rule(v))
	}
}

// kubeletLabels are the labels in the kubernetes.io and k8s.io namespaces that kubelet may set on its own Node
// (k8s.io/kubelet/pkg/apis.IsKubeletLabel), besides those in kubeletLabelNamespaces.
var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname":                   true,
	"kubernetes.io/os":                         true,
	"kubernetes.io/arch":                       true,
	"beta.kubernetes.io/os":                    true,
	"beta.kubernetes.io/arch":                  true,
	"beta.kubernetes.io/instance-type":         true,
	"node.kubernetes.io/instance-type":         true,
	"topology.kubernetes.io/region":            true,
	"topology.kubernetes.io/zone":              true,
	"failure-domain.beta.kubernetes.io/region": true,
	"failure-domain.beta.kubernetes.io/zone":   true,
}

var kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}

// kubeletLabelAllowed reports whether kubelet accepts a --node-labels key: any key outside the kubernetes.io
// and k8s.io namespaces, and within them only kubeletLabels and kubeletLabelNamespaces. Any other is refused
// when kubelet starts ("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels").
func kubeletLabelAllowed(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	ns = strings.ToLower(ns)
	under := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
	if !under("kubernetes.io") && !under("k8s.io") {
		return true
	}
	return kubeletLabels[strings.ToLower(key)] || slices.ContainsFunc(kubeletLabelNamespaces, under)
}
