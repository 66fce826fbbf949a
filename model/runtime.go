package model

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// The container runtime of every node: containerd 2.x (2.1 or later) with runc, configured by nodeup from the
// cluster spec. The binaries are assets (spec.assets): nodeup installs them where these files expect them.
// docs/nodeup.md "The container runtime" tells the whole of it.

// Paths of the container runtime on a node.
const (
	ContainerdBinary     = "/usr/local/bin/containerd"
	CtrBinary            = "/usr/local/bin/ctr"
	RuncBinary           = "/usr/local/sbin/runc"
	ContainerdConfigFile = "/etc/containerd/config.toml"
	CNIConfigTemplate    = "/etc/containerd/cni-conf.template"
	CrictlConfig         = "/etc/crictl.yaml"
	cniBinDir            = "/opt/cni/bin"
	CNIConfDir           = "/etc/cni/net.d"
	ContainerdUnit       = "containerd.service"
)

// DefaultSandboxImage is the pod sandbox ("pause") image by default: the one containerd 2.4 itself defaults to.
const DefaultSandboxImage = "registry.k8s.io/pause:3.10.2"

// ContainerdSpec configures containerd, the container runtime of every node. The cgroup driver is not here:
// containerd uses kubelet's (spec.kubelet.cgroupDriver), and its socket is kubelet's
// spec.kubelet.containerRuntimeEndpoint, so that the two never disagree.
type ContainerdSpec struct {
	// SandboxImage is the image of every pod's sandbox (the "pause" container), pinned in containerd so that
	// kubelet's image garbage collection never removes it: registry.k8s.io/pause:3.10.2 by default. A node that
	// reaches no registry must preload it.
	SandboxImage string `json:"sandboxImage,omitempty"`
	// RestrictOOMScoreAdj makes containerd clamp the oom_score_adj a container asks for to no less than its own,
	// instead of handing runc a lower one: false by default. Set it on machines whose containers cannot lower
	// an oom_score_adj (no CAP_SYS_RESOURCE, as in some VMs and unprivileged containers), where runc fails to
	// start a pod sandbox ("can't get final child's PID from pipe: EOF") otherwise.
	RestrictOOMScoreAdj *bool `json:"restrictOOMScoreAdj,omitempty"`
}

// completeContainerd fills in spec.containerd's defaults.
func completeContainerd(s *ClusterSpec) {
	if s.Containerd == nil {
		s.Containerd = &ContainerdSpec{}
	}
	setDefault(&s.Containerd.SandboxImage, DefaultSandboxImage)
	ptrDefault(&s.Containerd.RestrictOOMScoreAdj, false)
}

// validateContainerd checks spec.containerd.
func validateContainerd(ps *problems, s *ClusterSpec) {
	if c := s.Containerd; c != nil && c.SandboxImage != "" {
		check(ps, "spec.containerd.sandboxImage", imageProblem(c.SandboxImage))
	}
}

// ContainerdConfig is /etc/containerd/config.toml of the nodes of a complete spec. Version 3 is read by every containerd 2.x (2.4 migrates it
// to its version 4 when it loads it, and says so in its log): nothing here is among what version 4 moved. Every
// setting not here keeps containerd's default (its root and state directories among them).
//
// containerd listens where kubelet's containerRuntimeEndpoint says; runc's cgroups are systemd's when kubelet's
// cgroupDriver is systemd; the sandbox image is pinned; the CNI plugins are in /opt/cni/bin. The pod network's
// configuration is written by containerd itself into /etc/cni/net.d, from cniTemplateText, once kubelet tells it
// the node's pod CIDR.
func ContainerdConfig(s *ClusterSpec) (string, error) {
	k, c := s.Kubelet, s.Containerd
	if k == nil || c == nil || c.RestrictOOMScoreAdj == nil {
		return "", fmt.Errorf("the cluster spec is not complete (no kubelet or containerd)")
	}
	sock, ok := strings.CutPrefix(k.ContainerRuntimeEndpoint, "unix://")
	if !ok || !path.IsAbs(sock) {
		return "", fmt.Errorf("spec.kubelet.containerRuntimeEndpoint (kubelet's --container-runtime-endpoint) %q is not a unix:// socket containerd can listen on", k.ContainerRuntimeEndpoint)
	}
	var systemdCgroup bool
	switch k.CgroupDriver {
	case "systemd":
		systemdCgroup = true
	case "cgroupfs":
	default:
		return "", fmt.Errorf("spec.kubelet.cgroupDriver (kubelet's --cgroup-driver, containerd's too) %q is not one of systemd, cgroupfs", k.CgroupDriver)
	}
	q := tomlString
	return `# Managed by kubeup (nodeup): containerd's configuration, from the cluster spec.
version = 3

[grpc]
  address = ` + q(sock) + `

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = ` + q(c.SandboxImage) + `

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = ` + strconv.FormatBool(*c.RestrictOOMScoreAdj) + `

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = ` + q(RuncBinary) + `
  SystemdCgroup = ` + strconv.FormatBool(systemdCgroup) + `

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = [` + q(cniBinDir) + `]
  conf_dir = ` + q(CNIConfDir) + `
  conf_template = ` + q(CNIConfigTemplate) + `
`, nil
}

// tomlString is s as a TOML basic string: quotes, backslashes and control characters escaped, so that any value
// reads back as exactly itself and nothing else.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CNITemplateText returns the template containerd renders into /etc/cni/net.d/10-containerd-net.conflist when
// kubelet tells it the node's pod CIDR (spec.kubeControllerManager.allocateNodeCIDRs gives each node one): a Linux
// bridge cni0 for the node's pods, the node its gateway (which turns on IP forwarding), addresses from the node's
// range (host-local), and host ports (portmap). mtu is the bridge's and the pods' interfaces' MTU (PodMTU); 0
// sets none (the plugin's default, 1500). Pods reach pods of other nodes through the routes protokube keeps on
// each node to the other nodes' ranges (kubenet), or through flannel's VXLAN device (flannel: the node's flannel
// subnet is its pod CIDR, so the same bridge serves; docs/networking.md), unmasqueraded: a pod sees its peer's
// own address. Nothing is masqueraded (no ipMasq: the node needs no iptables for its pods; a hostPort does need
// iptables on the node, portmap's). containerd brings up each pod's loopback itself, with the loopback plugin.
// Until the node has a pod CIDR there is no network configuration, and kubelet reports the node NotReady.
func CNITemplateText(mtu int) string {
	mtuLine := ""
	if mtu > 0 {
		mtuLine = "\n      \"mtu\": " + strconv.Itoa(mtu) + ","
	}
	return `{
  "cniVersion": "1.0.0",
  "name": "kubeup",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "hairpinMode": true,` + mtuLine + `
      "ipam": {
        "type": "host-local",
        "ranges": [{{range $i, $r := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$r}}"}]{{end}}],
        "routes": [{{range $i, $r := .Routes}}{{if $i}}, {{end}}{"dst": "{{$r}}"}{{end}}]
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`
}

// VXLANOverhead is what VXLAN adds to each packet between nodes: the outer Ethernet (14), IPv4 (20) and UDP (8)
// headers and VXLAN's own (8). flanneld gives its device flannel.1 the node's link MTU less this.
const VXLANOverhead = 50

// FlannelPodMTU is the pods' MTU under flannel: a link MTU of 1500 (Ethernet's; the local provider's and AWS's
// between zones) less VXLANOverhead, so that a full-sized pod packet fits flannel.1 without fragmenting.
const FlannelPodMTU = 1500 - VXLANOverhead

// PodMTU is the MTU of the node's bridge and its pods' interfaces: FlannelPodMTU under flannel, 0 under kubenet
// (none set: the link's 1500, packets between nodes are routed unencapsulated).
func PodMTU(s *ClusterSpec) int {
	if s.Networking != nil && s.Networking.PodNetwork == PodNetworkFlannel {
		return FlannelPodMTU
	}
	return 0
}

// crictlConfigText is /etc/crictl.yaml: crictl talks to containerd where kubelet does.
func CrictlConfigText(endpoint string) (string, error) {
	e, err := json.Marshal(endpoint) // a JSON string is a YAML scalar, quoted
	if err != nil {
		return "", err
	}
	return "# Managed by kubeup (nodeup): crictl talks to the container runtime kubelet uses.\n" +
		"runtime-endpoint: " + string(e) + "\nimage-endpoint: " + string(e) + "\ntimeout: 10\n", nil
}

// containerdUnitText is containerd's unit, as containerd's own: Delegate=yes hands it the cgroups of its
// containers, KillMode=process leaves the containers (their shims) running when containerd stops or restarts,
// and OOMScoreAdjust keeps the kernel from killing it before the containers (systemd goes on without it where
// it may not lower it). No LimitNOFILE: containerd raises its own soft limit to the hard one.
var ContainerdUnitText = `# Managed by kubeup (nodeup).
[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target local-fs.target dbus.service

[Service]
ExecStartPre=-` + must(execLine("/sbin/modprobe", "overlay")) + `
ExecStart=` + must(execLine(ContainerdBinary)) + `
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`
