package model

import (
	"fmt"
	"net/netip"
	"strings"
)

// AddonsSpec are the addons kubeup keeps in the cluster through its API: `kubeup update cluster` applies them
// once the API answers (docs/addons.md). Each can be disabled, so that the operator runs their own instead.
type AddonsSpec struct {
	// CoreDNS is the cluster's DNS: a Deployment in kube-system behind the Service kube-dns at
	// spec.kubelet.clusterDNS.
	CoreDNS *CoreDNSAddon `json:"coreDNS,omitempty"`
	// Flannel is the pod network's DaemonSet when spec.networking.podNetwork is flannel (docs/networking.md):
	// completed then, and only then.
	Flannel *FlannelAddon `json:"flannel,omitempty"`
}

// CoreDNSAddon configures the CoreDNS addon.
type CoreDNSAddon struct {
	// Enabled is true by default; false deletes the objects kubeup applied for it (and only those).
	Enabled *bool `json:"enabled,omitempty"`
	// Image is CoreDNS's container image, pinned: DefaultCoreDNSImage by default. Nodes preload it
	// (spec.assets.images.coredns).
	Image string `json:"image,omitempty"`
	// Replicas is the Deployment's number of pods: 2 by default.
	Replicas *int32 `json:"replicas,omitempty"`
}

// DefaultCoreDNSImage is the CoreDNS image kubeup applies by default: the version `make images` builds
// (hack/coredns/go.mod; TestCoreDNSImageIsBuilt holds them together).
const DefaultCoreDNSImage = defaultRegistry + "/coredns/coredns:v1.12.1"

// Addon names, as the label AddonLabel carries them and spec.assets.images names their images.
const (
	AddonCoreDNS = "coredns"
)

// AddonLabel marks every object kubeup applies for an addon, its value the addon's name: kubeup deletes only
// objects that carry it (a disabled addon's, or one the addon no longer has).
const AddonLabel = "kubeup.dev/addon"

// coreDNSEnabled reports whether the CoreDNS addon runs: spec.addons.coreDNS.enabled, true when left out.
func coreDNSEnabled(s *ClusterSpec) bool {
	a := s.Addons
	return a == nil || a.CoreDNS == nil || a.CoreDNS.Enabled == nil || *a.CoreDNS.Enabled
}

// completeAddons fills in spec.addons: each addon enabled, its pinned image, its size.
func completeAddons(s *ClusterSpec) {
	if s.Addons == nil {
		s.Addons = &AddonsSpec{}
	}
	if s.Addons.CoreDNS == nil {
		s.Addons.CoreDNS = &CoreDNSAddon{}
	}
	d := s.Addons.CoreDNS
	ptrDefault(&d.Enabled, true)
	setDefault(&d.Image, DefaultCoreDNSImage)
	ptrDefault(&d.Replicas, 2)
	if flannelEnabled(s) {
		if s.Addons.Flannel == nil {
			s.Addons.Flannel = &FlannelAddon{}
		}
		setDefault(&s.Addons.Flannel.Image, DefaultFlannelImage)
	}
}

// nodeAddons is spec.addons as a node configuration carries it: only what nodes act on, each addon's enabled
// and image (the images they preload). Its size is the API's business: a change of replicas changes no node
// configuration, so no machine is replaced for it.
func nodeAddons(a *AddonsSpec) *AddonsSpec {
	if a == nil {
		return nil
	}
	out := &AddonsSpec{Flannel: a.Flannel}
	if a.CoreDNS != nil {
		out.CoreDNS = &CoreDNSAddon{Enabled: a.CoreDNS.Enabled, Image: a.CoreDNS.Image}
	}
	return out
}

// validateAddons checks spec.addons: each addon's image and size, and that an enabled CoreDNS has an address
// for its Service (spec.kubelet.clusterDNS, in spec.networking.serviceClusterIPRange).
func validateAddons(ps *problems, s *ClusterSpec) {
	if s.Addons != nil && s.Addons.Flannel != nil {
		if flannelEnabled(s) {
			checkIf(ps, "spec.addons.flannel.image", s.Addons.Flannel.Image, imageProblem)
		} else if s.Networking != nil {
			ps.add("spec.addons.flannel", "set, but spec.networking.podNetwork is %s: flannel runs only when the pod network is flannel; leave spec.addons.flannel out",
				s.Networking.PodNetwork)
		}
	}
	if s.Addons == nil || s.Addons.CoreDNS == nil {
		return
	}
	const p = "spec.addons.coreDNS"
	d := s.Addons.CoreDNS
	checkIf(ps, p+".image", d.Image, imageProblem)
	if d.Replicas != nil && *d.Replicas < 1 {
		ps.add(p+".replicas", "%d: must be at least 1 (to run no CoreDNS, set %s.enabled: false)", *d.Replicas, p)
	}
	if !coreDNSEnabled(s) || s.Kubelet == nil || s.Kubelet.ClusterDNS == "" || ipProblem(s.Kubelet.ClusterDNS) != "" ||
		s.Networking == nil || cidrProblem(s.Networking.ServiceClusterIPRange) != "" {
		return // nothing to compare, or a problem reported at its own field
	}
	ip := netip.MustParseAddr(s.Kubelet.ClusterDNS)
	if !netip.MustParsePrefix(s.Networking.ServiceClusterIPRange).Masked().Contains(ip) {
		ps.add("spec.kubelet.clusterDNS", "%s is not in spec.networking.serviceClusterIPRange %s: CoreDNS's Service (kube-system/kube-dns) takes this address, which must be a service address; "+
			"leave clusterDNS out (its default is the range's 10th address), or set %s.enabled: false", ip, s.Networking.ServiceClusterIPRange, p)
	}
}

// AddonObject is one object of an addon: its manifest (apiVersion, kind, metadata and what kubeup sets) and its
// resource (the kind's plural, lower case: its API path's collection).
type AddonObject struct {
	Resource string
	Manifest map[string]any
}

// Kind, Namespace and Name are the object's, from its manifest.
func (o AddonObject) Kind() string { k, _ := o.Manifest["kind"].(string); return k }
func (o AddonObject) Namespace() string {
	ns, _ := o.meta()["namespace"].(string)
	return ns
}
func (o AddonObject) Name() string { n, _ := o.meta()["name"].(string); return n }
func (o AddonObject) meta() map[string]any {
	m, _ := o.Manifest["metadata"].(map[string]any)
	return m
}

// APIVersion is the object's, from its manifest.
func (o AddonObject) APIVersion() string { v, _ := o.Manifest["apiVersion"].(string); return v }

// AddonCollection is a collection an addon can have objects in: of a kind, in a namespace ("" for a kind that
// has none).
type AddonCollection struct {
	APIVersion, Kind, Resource, Namespace string
}

// Addon is one addon of a complete spec: its objects when it is enabled (none when not), in the order they are
// applied (the Deployment last), and every collection it can have objects in, enabled or not (where kubeup
// looks for what it applied and no longer wants).
type Addon struct {
	Name        string
	Enabled     bool
	Objects     []AddonObject
	Collections []AddonCollection
}

// Addons returns the addons of a complete, valid spec, by name.
func Addons(c *Cluster) []Addon {
	s := &c.Spec
	addon := func(name string, enabled bool, objs []AddonObject) Addon {
		a := Addon{Name: name, Enabled: enabled}
		for _, o := range objs {
			a.Collections = append(a.Collections, AddonCollection{APIVersion: o.APIVersion(), Kind: o.Kind(), Resource: o.Resource, Namespace: o.Namespace()})
		}
		if a.Enabled {
			a.Objects = objs
		}
		return a
	}
	return []Addon{
		addon(AddonCoreDNS, coreDNSEnabled(s), coreDNSObjects(s)),
		addon(AddonFlannel, flannelEnabled(s), flannelObjects(s)),
	}
}

// coreDNSObjects are CoreDNS's objects: its ServiceAccount, the ClusterRole and ClusterRoleBinding that let it
// watch Services, EndpointSlices, Pods and Namespaces, the ConfigMap of its Corefile, its Deployment and the
// Service kube-dns (upstream's name: tests look for it) at spec.kubelet.clusterDNS.
func coreDNSObjects(s *ClusterSpec) []AddonObject {
	d := &CoreDNSAddon{}
	if s.Addons != nil && s.Addons.CoreDNS != nil {
		d = s.Addons.CoreDNS
	}
	image, replicas := d.Image, int32(2)
	if image == "" {
		image = DefaultCoreDNSImage
	}
	if d.Replicas != nil {
		replicas = *d.Replicas
	}
	domain, dnsIP := "cluster.local", ""
	if s.Networking != nil && s.Networking.ClusterDomain != "" {
		domain = s.Networking.ClusterDomain
	}
	if s.Kubelet != nil {
		dnsIP = s.Kubelet.ClusterDNS
	}
	const ns, name = "kube-system", "coredns"
	labels := func(more ...string) map[string]any { return addonLabels(AddonCoreDNS, more...) }
	meta := objectMeta
	const rbac = "rbac.authorization.k8s.io"
	watch := []any{"list", "watch"}
	dnsLabel := []string{"k8s-app", "kube-dns"}
	port := func(name string, n int, protocol string) map[string]any {
		return map[string]any{"name": name, "port": n, "targetPort": n, "protocol": protocol}
	}
	return []AddonObject{
		{"serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ns, name, labels())}},
		{"clusterroles", map[string]any{"apiVersion": rbac + "/v1", "kind": "ClusterRole", "metadata": meta("", "system:coredns", labels()),
			"rules": []any{
				map[string]any{"apiGroups": []any{""}, "resources": []any{"endpoints", "services", "pods", "namespaces"}, "verbs": watch},
				map[string]any{"apiGroups": []any{"discovery.k8s.io"}, "resources": []any{"endpointslices"}, "verbs": watch},
			}}},
		{"clusterrolebindings", map[string]any{"apiVersion": rbac + "/v1", "kind": "ClusterRoleBinding", "metadata": meta("", "system:coredns", labels()),
			"roleRef":  map[string]any{"apiGroup": rbac, "kind": "ClusterRole", "name": "system:coredns"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": ns}}}},
		{"configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(ns, name, labels()),
			"data": map[string]any{"Corefile": corefile(domain)}}},
		{"deployments", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(ns, name, labels(dnsLabel...)),
			"spec": map[string]any{
				"replicas": replicas,
				"selector": map[string]any{"matchLabels": map[string]any{"k8s-app": "kube-dns"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels(dnsLabel...)},
					"spec":     coreDNSPodSpec(image),
				},
			}}},
		{"services", map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": meta(ns, "kube-dns", labels(append(dnsLabel, "kubernetes.io/name", "CoreDNS")...)),
			"spec": map[string]any{
				"selector":  map[string]any{"k8s-app": "kube-dns"},
				"clusterIP": dnsIP,
				"ports":     []any{port("dns", 53, "UDP"), port("dns-tcp", 53, "TCP"), port("metrics", 9153, "TCP")},
			}}},
	}
}

// addonLabels are the labels of an object of addon: AddonLabel, its value the addon's name, and more (key, value,
// key, value...).
func addonLabels(addon string, more ...string) map[string]any {
	m := map[string]any{AddonLabel: addon}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	return m
}

// objectMeta is an object's metadata: its name, its namespace ("" for a kind that has none) and its labels.
func objectMeta(namespace, name string, labels map[string]any) map[string]any {
	m := map[string]any{"name": name, "labels": labels}
	if namespace != "" {
		m["namespace"] = namespace
	}
	return m
}

// corefile is CoreDNS's configuration: the cluster's names from the API, everything else from the node's
// resolver; health on :8080 (liveness), ready on :8181 (readiness), metrics on :9153.
func corefile(domain string) string {
	return strings.Join([]string{
		".:53 {",
		"    errors",
		"    health :8080",
		"    ready :8181",
		fmt.Sprintf("    kubernetes %s in-addr.arpa ip6.arpa {", domain),
		"        pods insecure",
		"        fallthrough in-addr.arpa ip6.arpa",
		"    }",
		"    prometheus :9153",
		"    forward . /etc/resolv.conf",
		"    cache 30",
		"    loop",
		"    reload",
		"    loadbalance",
		"}",
		"",
	}, "\n")
}

// coreDNSPodSpec is the pod of CoreDNS's Deployment: critical, on any node (the control plane's too: a demo
// cluster may have only control-plane nodes), spread over nodes where it can be, resolving upstream with the
// node's resolver (dnsPolicy Default), its image preloaded (IfNotPresent: no registry needs to answer).
func coreDNSPodSpec(image string) map[string]any {
	probe := func(path string, port int) map[string]any {
		return map[string]any{"httpGet": map[string]any{"path": path, "port": port, "scheme": "HTTP"}}
	}
	liveness := probe("/health", 8080)
	liveness["initialDelaySeconds"], liveness["timeoutSeconds"], liveness["failureThreshold"] = 60, 5, 5
	containerPort := func(name string, n int, protocol string) map[string]any {
		return map[string]any{"name": name, "containerPort": n, "protocol": protocol}
	}
	return map[string]any{
		"serviceAccountName": "coredns",
		"priorityClassName":  "system-cluster-critical",
		"dnsPolicy":          "Default",
		"nodeSelector":       map[string]any{"kubernetes.io/os": "linux"},
		"tolerations": []any{
			map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
			map[string]any{"key": "CriticalAddonsOnly", "operator": "Exists"},
		},
		"affinity": map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
			map[string]any{"weight": 100, "podAffinityTerm": map[string]any{
				"labelSelector": map[string]any{"matchLabels": map[string]any{"k8s-app": "kube-dns"}},
				"topologyKey":   "kubernetes.io/hostname",
			}},
		}}},
		"containers": []any{map[string]any{
			"name":            "coredns",
			"image":           image,
			"imagePullPolicy": "IfNotPresent",
			"args":            []any{"-conf", "/etc/coredns/Corefile"},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "70Mi"},
				"limits":   map[string]any{"memory": "170Mi"},
			},
			"ports":          []any{containerPort("dns", 53, "UDP"), containerPort("dns-tcp", 53, "TCP"), containerPort("metrics", 9153, "TCP")},
			"readinessProbe": probe("/ready", 8181),
			"livenessProbe":  liveness,
			"securityContext": map[string]any{
				"allowPrivilegeEscalation": false,
				"readOnlyRootFilesystem":   true,
				"capabilities":             map[string]any{"add": []any{"NET_BIND_SERVICE"}, "drop": []any{"ALL"}},
			},
			"volumeMounts": []any{map[string]any{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": true}},
		}},
		"volumes": []any{map[string]any{"name": "config-volume", "configMap": map[string]any{
			"name": "coredns", "items": []any{map[string]any{"key": "Corefile", "path": "Corefile"}},
		}}},
	}
}
