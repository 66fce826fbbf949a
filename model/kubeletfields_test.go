package model

import "strconv"

// kubeletField is a field of the spec that ends up in kubelet's flags.
type kubeletField struct {
	Name string
	Flag string                     // the kubelet flag it is part of
	Path func(v string) string      // the field path validation names for value v
	Set  func(c *Cluster, v string) // sets the field of a complete spec to v
}

func fixed(p string) func(string) string { return func(string) string { return p } }

var kubeletFields = []kubeletField{
	{"node label value", "node-labels", fixed(`spec.kubelet.nodeLabels["example.com/team"]`),
		func(c *Cluster, v string) { c.Spec.Kubelet.NodeLabels = map[string]string{"example.com/team": v} }},
	{"node label key", "node-labels", func(v string) string { return "spec.kubelet.nodeLabels[" + strconv.Quote(v) + "]" },
		func(c *Cluster, v string) { c.Spec.Kubelet.NodeLabels = map[string]string{v: "x"} }},
	{"feature gate key", "feature-gates", func(v string) string { return "spec.kubelet.featureGates[" + strconv.Quote(v) + "]" },
		func(c *Cluster, v string) { c.Spec.Kubelet.FeatureGates = map[string]string{v: "true"} }},
	{"feature gate value", "feature-gates", fixed(`spec.kubelet.featureGates["Foo"]`),
		func(c *Cluster, v string) { c.Spec.Kubelet.FeatureGates = map[string]string{"Foo": v} }},
	{"taint", "register-with-taints", fixed("spec.kubelet.registerWithTaints[0]"),
		func(c *Cluster, v string) {
			c.Spec.Kubelet.RegisterWithTaints = []string{"example.com/t=" + v + ":NoSchedule"}
		}},
	{"podManifestPath", "pod-manifest-path", fixed("spec.kubelet.podManifestPath"),
		func(c *Cluster, v string) { c.Spec.Kubelet.PodManifestPath = "/etc/kubernetes/" + v }},
	{"kubeconfig", "kubeconfig", fixed("spec.kubelet.kubeconfig"),
		func(c *Cluster, v string) { c.Spec.Kubelet.Kubeconfig = "/var/lib/kubelet/" + v }},
	{"clientCAFile", "client-ca-file", fixed("spec.kubelet.clientCAFile"),
		func(c *Cluster, v string) { c.Spec.Kubelet.ClientCAFile = "/srv/kubernetes/" + v }},
	{"containerRuntimeEndpoint", "container-runtime-endpoint", fixed("spec.kubelet.containerRuntimeEndpoint"),
		func(c *Cluster, v string) { c.Spec.Kubelet.ContainerRuntimeEndpoint = "unix:///run/" + v }},
	{"clusterDNS", "cluster-dns", fixed("spec.kubelet.clusterDNS"),
		func(c *Cluster, v string) { c.Spec.Kubelet.ClusterDNS = v }},
	{"clusterDomain", "cluster-domain", fixed("spec.kubelet.clusterDomain"),
		func(c *Cluster, v string) { c.Spec.Kubelet.ClusterDomain = v }},
	{"cgroupDriver", "cgroup-driver", fixed("spec.kubelet.cgroupDriver"),
		func(c *Cluster, v string) { c.Spec.Kubelet.CgroupDriver = v }},
	{"authorizationMode", "authorization-mode", fixed("spec.kubelet.authorizationMode"),
		func(c *Cluster, v string) { c.Spec.Kubelet.AuthorizationMode = v }},
}
