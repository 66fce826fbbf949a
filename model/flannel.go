package model

import (
	"encoding/json"
	"strconv"
)

// flannel (docs/networking.md#flannel) carries pods' packets between nodes in VXLAN when
// spec.networking.podNetwork is flannel: a DaemonSet of flanneld on every node (an addon, like CoreDNS), with
// flannel's kube subnet manager: a node's flannel subnet is its Node's spec.podCIDR, which
// kube-controller-manager allocates, so the node's bridge and host-local addresses (CNITemplateText) stay as
// kubenet has them, with a smaller MTU (FlannelPodMTU). flanneld makes the device flannel.1, its forwarding and
// neighbour entries and the routes to the other nodes' ranges through it; protokube makes no route.

// FlannelAddon configures the flannel addon, which runs when spec.networking.podNetwork is flannel (and only
// then: the pod network says whether it runs, there is no enabled of its own).
type FlannelAddon struct {
	// Image is flanneld's container image, pinned: DefaultFlannelImage by default. Nodes preload it
	// (spec.assets.images.flannel).
	Image string `json:"image,omitempty"`
}

// DefaultFlannelImage is the flannel image kubeup applies by default: the version `make images` builds
// (hack/flannel/go.mod; TestFlannelImageIsBuilt holds them together), named as flannel publishes it.
const DefaultFlannelImage = "ghcr.io/flannel-io/flannel:v0.28.10"

// AddonFlannel is the flannel addon's name (AddonLabel's value, spec.assets.images' key).
const AddonFlannel = "flannel"

// FlannelVXLANPort is the UDP port flannel's VXLAN packets go to between nodes (the Linux kernel's VXLAN
// default, flannel's too): the nodes' firewalls must let it in from every node.
const FlannelVXLANPort = 8472

// FlannelVNI is the VXLAN network identifier of the cluster's pod network.
const FlannelVNI = 1

// flannelEnabled reports whether the flannel addon runs: spec.networking.podNetwork is flannel.
func flannelEnabled(s *ClusterSpec) bool {
	return s.Networking != nil && s.Networking.PodNetwork == PodNetworkFlannel
}

// flannelImage is the image of flannel's DaemonSet: spec.addons.flannel.image, else DefaultFlannelImage.
func flannelImage(s *ClusterSpec) string {
	if a := s.Addons; a != nil && a.Flannel != nil && a.Flannel.Image != "" {
		return a.Flannel.Image
	}
	return DefaultFlannelImage
}

// flannelNetConf is flannel's net-conf.json: the cluster's pod range (every Node's spec.podCIDR is in it) over
// VXLAN on FlannelVXLANPort with FlannelVNI. iptables, not nftables (the default): flanneld with nftables
// deletes its iptables rules at start and exits when there is no iptables binary; with iptables it only deletes
// its nftables table, and fails quietly without nft.
func flannelNetConf(podCIDR string) string {
	conf := map[string]any{
		"Network":        podCIDR,
		"EnableIPv4":     true,
		"EnableNFTables": false,
		"Backend":        map[string]any{"Type": "vxlan", "VNI": FlannelVNI, "Port": FlannelVXLANPort},
	}
	b, _ := json.MarshalIndent(conf, "", "  ") // maps of strings, numbers and booleans: no error
	return string(b) + "\n"
}

// flannelObjects are flannel's objects: its ServiceAccount, the ClusterRole and ClusterRoleBinding that let it
// read Nodes and write its annotations and the NetworkUnavailable condition, the ConfigMap of its
// net-conf.json, and the DaemonSet that runs flanneld on every node.
func flannelObjects(s *ClusterSpec) []AddonObject {
	podCIDR := ""
	if s.Networking != nil {
		podCIDR = s.Networking.PodCIDR
	}
	const ns, name = "kube-system", "flannel"
	labels := func(more ...string) map[string]any { return addonLabels(AddonFlannel, more...) }
	meta := objectMeta
	const rbac = "rbac.authorization.k8s.io"
	app := []string{"app", "flannel"}
	return []AddonObject{
		{"serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ns, name, labels())}},
		{"clusterroles", map[string]any{"apiVersion": rbac + "/v1", "kind": "ClusterRole", "metadata": meta("", "kubeup:flannel", labels()),
			"rules": []any{
				map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get", "list", "watch", "patch"}},
				map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes/status"}, "verbs": []any{"patch"}},
			}}},
		{"clusterrolebindings", map[string]any{"apiVersion": rbac + "/v1", "kind": "ClusterRoleBinding", "metadata": meta("", "kubeup:flannel", labels()),
			"roleRef":  map[string]any{"apiGroup": rbac, "kind": "ClusterRole", "name": "kubeup:flannel"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": ns}}}},
		{"configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(ns, name, labels(app...)),
			"data": map[string]any{"net-conf.json": flannelNetConf(podCIDR)}}},
		{"daemonsets", map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(ns, name, labels(app...)),
			"spec": map[string]any{
				"selector":       map[string]any{"matchLabels": map[string]any{"app": "flannel"}},
				"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 1}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels(app...)},
					"spec":     flannelPodSpec(flannelImage(s)),
				},
			}}},
	}
}

// flannelPodSpec is the pod of flannel's DaemonSet, one on every node whatever its taints: in the node's network
// namespace (hostNetwork: flannel.1 and the routes are the node's), able to make links and routes (NET_ADMIN,
// NET_RAW), the node's /run/flannel (subnet.env, for whoever reads it) mounted. flanneld runs with the kube subnet
// manager on the interface of the node's address (the Node's InternalIP, which kubenet's routes use too), makes
// no iptables rule (--iptables-forward-rules=false, and no --ip-masq: the nodes' FORWARD chain accepts, as
// kubenet needs too, and nothing is masqueraded), so its image needs neither iptables nor nft.
func flannelPodSpec(image string) map[string]any {
	env := func(name, path string) map[string]any {
		return map[string]any{"name": name, "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": path}}}
	}
	return map[string]any{
		"serviceAccountName": "flannel",
		"priorityClassName":  "system-node-critical",
		"hostNetwork":        true,
		"nodeSelector":       map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":        []any{map[string]any{"operator": "Exists"}},
		"containers": []any{map[string]any{
			"name":            "flannel",
			"image":           image,
			"imagePullPolicy": "IfNotPresent",
			"command":         []any{"/opt/bin/flanneld"},
			"args": []any{
				"--kube-subnet-mgr",
				"--iface=$(HOST_IP)",
				"--iptables-forward-rules=false",
				"--net-config-path=/etc/kube-flannel/net-conf.json",
				"--subnet-file=/run/flannel/subnet.env",
				"--healthz-ip=127.0.0.1",
				"--healthz-port=" + strconv.Itoa(FlannelHealthzPort),
			},
			"env": []any{
				env("NODE_NAME", "spec.nodeName"), env("POD_NAME", "metadata.name"), env("POD_NAMESPACE", "metadata.namespace"),
				env("HOST_IP", "status.hostIP"),
			},
			"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "50Mi"}},
			"livenessProbe": map[string]any{"httpGet": map[string]any{"host": "127.0.0.1", "path": "/healthz", "port": FlannelHealthzPort, "scheme": "HTTP"},
				"initialDelaySeconds": 30, "periodSeconds": 10, "failureThreshold": 6},
			"securityContext": map[string]any{
				"privileged":   false,
				"capabilities": map[string]any{"add": []any{"NET_ADMIN", "NET_RAW"}},
			},
			"volumeMounts": []any{
				map[string]any{"name": "run", "mountPath": "/run/flannel"},
				map[string]any{"name": "net-conf", "mountPath": "/etc/kube-flannel", "readOnly": true},
			},
		}},
		"volumes": []any{
			map[string]any{"name": "run", "hostPath": map[string]any{"path": "/run/flannel", "type": "DirectoryOrCreate"}},
			map[string]any{"name": "net-conf", "configMap": map[string]any{"name": "flannel",
				"items": []any{map[string]any{"key": "net-conf.json", "path": "net-conf.json"}}}},
		},
	}
}

// FlannelHealthzPort is where flanneld answers /healthz, on the node's 127.0.0.1 (its liveness probe).
const FlannelHealthzPort = 10244
