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
	switch ig.Spec.Role {
	case RoleControlPlane, RoleNode:
	default:
		return nil, fmt.Errorf("node configuration of %s: spec.role %q is not a role: want %s or %s", ig.Metadata.Name, ig.Spec.Role, RoleControlPlane, RoleNode)
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

	envText, err := kubeletEnv(kubeletFlags(s.Kubelet, ig))
	if err != nil {
		return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
	}
	env := engine.Add(g, &nodetasks.File{
		Path:     kubeletEnvFile,
		Contents: ptr(envText),
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

// kubeletEnv is the environment file kubelet.service reads its flags from: DAEMON_ARGS, as kops' nodeup writes
// it, so that an operator finds kubelet's flags where they look for them.
//
// kubelet.service starts `kubelet $DAEMON_ARGS`, and systemd splits such a variable into arguments at
// whitespace, and (systemd 252, Debian 12) also removes quotes and backslashes in it as a shell would. So every
// flag must be one plain word (plainWord): then it is exactly one argument under any of these rules, and the
// assignment itself is written escaped by systemd's rules (envAssignment). A flag with any other character is
// refused here, whatever validation said, naming the flag: validation refuses every such value with its field
// path first, so this only stops a spec that bypassed it. The alternative, each flag a quoted word of
// ExecStart=, would pass any value, but none of kubelet's values needs more than plainWord allows, and the flags
// would leave /etc/default/kubelet.
func kubeletEnv(flags []string) (string, error) {
	for _, f := range flags {
		if !plainWord(f) {
			return "", fmt.Errorf("kubelet flag %q cannot be passed through %s: only %s reach kubelet as exactly "+
				"one argument of $DAEMON_ARGS; fix the cluster spec (kubeup validates it) and run kubeup update cluster again", f, kubeletEnvFile, plainChars)
		}
	}
	line, err := envAssignment("DAEMON_ARGS", strings.Join(flags, " "))
	if err != nil {
		return "", err
	}
	return "# Managed by kubeup (nodeup): kubelet's flags, from the cluster spec.\n" + line, nil
}

// The units nodeup installs. Their values are constants, written by systemd's quoting rules all the same.
var (
	kubeletUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=Kubernetes kubelet
Documentation=https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Wants=containerd.service
After=containerd.service

[Service]
EnvironmentFile=` + must(unitPath(kubeletEnvFile)) + `
ExecStart=` + must(execLine(kubeletBinary)) + ` $DAEMON_ARGS
Restart=always
RestartSec=2s
KillMode=process

[Install]
WantedBy=multi-user.target
`

	protokubeUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=protokube: claims and mounts this node's etcd volumes, runs etcd, keeps DNS right
Wants=kubelet.service
After=kubelet.service

[Service]
ExecStart=` + must(execLine(protokubeBinary, "--conf="+protokubeConfFile)) + `
Restart=always
RestartSec=5s

[Install]
WantedBy=multi-user.target
`
)

// must panics on an error from writing a constant: a programmer's error, found when the package loads.
func must(s string, err error) string {
	if err != nil {
		panic(fmt.Sprintf("model: %v", err))
	}
	return s
}
