package model

import (
	"fmt"
	"maps"
	"os"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Paths on a node.
const (
	kubeletEnvFile     = "/etc/default/kubelet"
	kubeletBinary      = "/usr/local/bin/kubelet"
	protokubeBinary    = "/usr/local/bin/protokube"
	protokubeConfFile  = "/etc/kubeup/protokube.yaml"
	systemdUnitDir     = "/etc/systemd/system"
	controlPlaneTaint  = "node-role.kubernetes.io/control-plane=:NoSchedule"
	instanceGroupLabel = "kubeup.dev/instancegroup"
)

// BuildNodeGraph returns the graph nodeup converges on a node of the configuration's instance group: kubelet's
// flags and unit, the static-pod manifests (kube-apiserver, kube-controller-manager and kube-scheduler on the
// control plane; kube-proxy everywhere) and, on the control plane, protokube's configuration and unit.
func BuildNodeGraph(nc *NodeConfig) (*engine.Graph[*nodetasks.Node], error) {
	c, ig := nc.Cluster, nc.InstanceGroup
	s := &c.Spec
	if s.Kubelet == nil || s.KubeProxy == nil {
		return nil, fmt.Errorf("node configuration of %s: the cluster spec is not complete (no kubelet or kubeProxy)", ig.Metadata.Name)
	}
	controlPlane := ig.Spec.Role == RoleControlPlane
	if controlPlane && (s.KubeAPIServer == nil || s.KubeControllerManager == nil || s.KubeScheduler == nil || nc.Protokube == nil) {
		return nil, fmt.Errorf("node configuration of %s: the control plane's configuration is not complete", ig.Metadata.Name)
	}

	g := engine.NewGraph[*nodetasks.Node]()
	manifestDir := engine.Add(g, &nodetasks.File{
		Path: s.Kubelet.PodManifestPath, Type: ptr("directory"), Mode: ptr(os.FileMode(0o755)),
	})

	addManifest := func(pod *nodetasks.Pod) {
		engine.Add(g, &nodetasks.ManifestFile{
			Path:  path.Join(s.Kubelet.PodManifestPath, pod.Metadata.Name+".manifest"),
			Pod:   pod,
			After: []engine.Task{manifestDir},
		})
	}
	if controlPlane {
		addManifest(kubeAPIServerPod(s.KubeAPIServer))
		addManifest(kubeControllerManagerPod(s.KubeControllerManager))
		addManifest(kubeSchedulerPod(s.KubeScheduler))
	}
	addManifest(kubeProxyPod(s.KubeProxy))

	env := engine.Add(g, &nodetasks.File{
		Path:     kubeletEnvFile,
		Contents: ptr(kubeletEnv(kubeletFlags(s.Kubelet, ig))),
		Mode:     ptr(os.FileMode(0o644)),
	})
	engine.Add(g, &nodetasks.SystemdService{
		Name:       "kubelet.service",
		Definition: ptr(kubeletUnit),
		Enabled:    ptr(true),
		Running:    ptr(true),
		// kubelet restarts when its flags change; it picks up changed manifests by itself, without a restart.
		DependsOn: []engine.Task{env},
	})

	if controlPlane {
		conf, err := yaml.Marshal(nc.Protokube)
		if err != nil {
			return nil, fmt.Errorf("encoding protokube's configuration: %w", err)
		}
		pconf := engine.Add(g, &nodetasks.File{
			Path: protokubeConfFile, Contents: ptr(string(conf)), Mode: ptr(os.FileMode(0o644)),
		})
		engine.Add(g, &nodetasks.SystemdService{
			Name:       "protokube.service",
			Definition: ptr(protokubeUnit),
			Enabled:    ptr(true),
			Running:    ptr(true),
			DependsOn:  []engine.Task{pconf},
		})
	}
	return g, nil
}

func ptr[T any](v T) *T { return &v }

// kubeletFlags adds what the instance group implies (its node label; the control plane's taint) to the spec's
// kubelet flags. A value the user set for the same flag wins.
//
// The control plane's node-role.kubernetes.io/control-plane label is not among them: kubelet refuses to start
// with a --node-labels key in the kubernetes.io or k8s.io namespaces outside the few it may set on itself
// (kubeletLabelAllowed), and the NodeRestriction admission plugin would refuse it anyway. That label is set on
// the Node object once it has registered, as kops-controller does; its taint is allowed here.
func kubeletFlags(k *KubeletConfig, ig *InstanceGroup) []string {
	cfg := *k
	labels := map[string]string{instanceGroupLabel: ig.Metadata.Name}
	if ig.Spec.Role == RoleControlPlane {
		if cfg.RegisterWithTaints == nil {
			cfg.RegisterWithTaints = []string{controlPlaneTaint}
		}
	}
	maps.Copy(labels, k.NodeLabels)
	cfg.NodeLabels = labels
	return Flags(&cfg)
}

// kubeletEnv is the environment file kubelet.service reads its flags from.
func kubeletEnv(flags []string) string {
	return "# Managed by kubeup (nodeup): kubelet's flags, from the cluster spec.\nDAEMON_ARGS=\"" +
		strings.Join(flags, " ") + "\"\n"
}

const kubeletUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=Kubernetes kubelet
Documentation=https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Wants=containerd.service
After=containerd.service

[Service]
EnvironmentFile=` + kubeletEnvFile + `
ExecStart=` + kubeletBinary + ` $DAEMON_ARGS
Restart=always
RestartSec=2s
KillMode=process

[Install]
WantedBy=multi-user.target
`

const protokubeUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=protokube: claims and mounts this node's etcd volumes, runs etcd, keeps DNS right
Wants=kubelet.service
After=kubelet.service

[Service]
ExecStart=` + protokubeBinary + ` --conf=` + protokubeConfFile + `
Restart=always
RestartSec=5s

[Install]
WantedBy=multi-user.target
`
