package model

import (
	"fmt"
	"maps"
	"os"
	"path"
	"strconv"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Paths on a node.
const (
	kubeletEnvFile  = "/etc/default/kubelet"
	kubeletBinary   = "/usr/local/bin/kubelet"
	protokubeBinary = "/usr/local/bin/protokube"
	// nodeConfFile is the node configuration nodeup converged the node to, as Encode writes it (its sha256 on
	// the first line): what protokube reads, with the same checks as nodeup, to run the same node tasks.
	nodeConfFile       = "/etc/kubeup/node.conf"
	systemdUnitDir     = "/etc/systemd/system"
	controlPlaneTaint  = "node-role.kubernetes.io/control-plane=:NoSchedule"
	instanceGroupLabel = "kubeup.dev/instancegroup"
)

// BuildNodeGraph returns the graph nodeup converges on a node of the configuration's instance group: the node
// tasks of AddNodeTasks. nodeup starts kubelet on a Node; on the control plane it writes and enables kubelet's
// unit but leaves kubelet to protokube, which makes sure it runs in each round (AddNodeTasks with StartKubelet).
func BuildNodeGraph(nc *NodeConfig) (*engine.Graph[*nodetasks.Node], error) {
	g := engine.NewGraph[*nodetasks.Node]()
	o := NodeTasksOptions{
		StartKubelet:   nc.InstanceGroup == nil || nc.InstanceGroup.Spec.Role != RoleControlPlane,
		StartProtokube: true,
	}
	if _, err := AddNodeTasks(g, func(n *nodetasks.Node) *nodetasks.Node { return n }, nc, o); err != nil {
		return nil, err
	}
	return g, nil
}

// NodeTasksOptions say what the node tasks do about the services they install. A service that is not started
// has its unit written and enabled all the same (so it starts at boot); it is neither started nor restarted,
// and runs as it runs.
type NodeTasksOptions struct {
	// StartKubelet starts kubelet.service when it is stopped, and restarts it when its unit or its flags
	// (/etc/default/kubelet) changed. nodeup sets it on a Node; on the control plane nodeup leaves kubelet to
	// protokube, which sets it in each round.
	StartKubelet bool
	// StartProtokube (control plane) starts protokube.service when it is stopped, and restarts it when its unit
	// or its configuration changed. nodeup sets it; protokube does not: a round that restarts the process
	// running it would be killed half-way.
	StartProtokube bool
	// LeaveAssets adds the assets' tasks with the Ignore lifecycle: protokube sets it. Installing them is
	// nodeup's; a round would hash every binary and image again for nothing.
	LeaveAssets bool
	// LeaveNodeConf leaves /etc/kubeup/node.conf out of the graph. protokube sets it: node.conf is the
	// configuration nodeup converged the node to (what a rolling update compares with the group's), written by
	// nodeup alone; a round that wrote back the configuration it read at its start would undo a nodeup that wrote
	// a newer one meanwhile.
	LeaveNodeConf bool
}

// AddNodeTasks adds to g the tasks that converge a node of the configuration's instance group, each run on the
// node in(world) of g's world: the container runtime's configuration and unit (addRuntimeTasks), kubelet's
// flags and unit, the static-pod manifests (kube-apiserver,
// kube-controller-manager and kube-scheduler on the control plane; kube-proxy everywhere) and, on the control
// plane, protokube's unit and the node configuration it reads (/etc/kubeup/node.conf, nc as Encode writes it).
// nodeup's graph holds them alone (BuildNodeGraph); protokube adds
// them to each round's graph, whose world is made of the node and the cloud.
func AddNodeTasks[C any](g *engine.Graph[C], in func(C) *nodetasks.Node, nc *NodeConfig, o NodeTasksOptions) (keystoreFiles []engine.Task, err error) {
	if nc.Cluster == nil || nc.InstanceGroup == nil {
		return nil, fmt.Errorf("node configuration: cluster and instanceGroup are required")
	}
	c, ig := nc.Cluster, nc.InstanceGroup
	s := &c.Spec
	if s.Kubelet == nil || s.KubeProxy == nil || s.Containerd == nil {
		return nil, fmt.Errorf("node configuration of %s: the cluster spec is not complete (no kubelet, kubeProxy or containerd)", ig.Metadata.Name)
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
	envText, err := kubeletEnv(kubeletFlags(s.Kubelet, ig))
	if err != nil {
		return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
	}
	var conf, roleConf string
	if controlPlane && !o.LeaveNodeConf {
		b, err := nc.Encode()
		if err != nil {
			return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
		}
		conf = string(b)
		if b, err = nc.RoleObject(); err != nil {
			return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
		}
		roleConf = string(b)
	}

	assets := addAssetTasks(g, in, nc, o.LeaveAssets)

	// The keystore's files come first: a component whose manifest is written starts at once, and reads them.
	for _, f := range nc.Files {
		mode, err := f.FileMode()
		if err != nil {
			return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
		}
		file := &nodetasks.File{Path: f.Path, Mode: ptr(os.FileMode(mode)), Owner: ptr("0"), Group: ptr("0")}
		if f.Sensitive {
			file.SecretContents = ptr(engine.NewSecret(f.Contents))
		} else {
			file.Contents = ptr(f.Contents)
		}
		keystoreFiles = append(keystoreFiles, engine.AddIn(g, in, file))
	}

	manifestDir := engine.AddIn(g, in, &nodetasks.File{
		Path: s.Kubelet.PodManifestPath, Type: ptr("directory"), Mode: ptr(os.FileMode(0o755)),
	})
	addManifest := func(pod *nodetasks.Pod) {
		engine.AddIn(g, in, &nodetasks.ManifestFile{
			Path:  path.Join(s.Kubelet.PodManifestPath, pod.Metadata.Name+".manifest"),
			Pod:   pod,
			After: append([]engine.Task{manifestDir}, keystoreFiles...),
		})
	}
	if controlPlane {
		addManifest(kubeAPIServerPod(s.KubeAPIServer))
		addManifest(kubeControllerManagerPod(s.KubeControllerManager))
		addManifest(kubeSchedulerPod(s.KubeScheduler))
	}
	addManifest(kubeProxyPod(s.KubeProxy))

	// containerd runs, with the images preloaded, before kubelet starts: it restarts when one of its binaries
	// changes, and each image the node preloads is imported once its archive is installed.
	runtime, err := addRuntimeTasks(g, in, s, runtimeAssets(nc, assets))
	if err != nil {
		return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
	}
	env := engine.AddIn(g, in, &nodetasks.File{
		Path:     kubeletEnvFile,
		Contents: ptr(envText),
		Mode:     ptr(os.FileMode(0o644)),
	})
	engine.AddIn(g, in, &nodetasks.SystemdService{
		Name:       "kubelet.service",
		Definition: ptr(kubeletUnit),
		Enabled:    ptr(true),
		Running:    startIf(o.StartKubelet),
		// kubelet restarts when its flags or its binary change; it picks up changed manifests by itself, without
		// a restart. containerd's service and the image imports only order it.
		DependsOn: append(append([]engine.Task{env}, dependsOnAsset(assets, AssetKubelet)...), runtime.after()...),
	})

	if controlPlane {
		// protokube reads the node configuration nodeup verified, from a copy of its own: nodeup's may be a URL
		// whose credentials protokube need not have, or a file a boot script replaces. 0600: the configuration
		// is the cluster's spec.
		// A configuration that names its role's (NodeConfig.RoleConfig) finds it beside it: that copy is written
		// first, so that protokube never reads a node.conf whose role's configuration is not there yet.
		dependsOn := dependsOnAsset(assets, AssetProtokube)
		if !o.LeaveNodeConf {
			var after []engine.Task
			if roleConf != "" {
				after = append(after, engine.AddIn(g, in, &nodetasks.File{
					Path: path.Join(path.Dir(nodeConfFile), nc.RoleConfig.Object), SecretContents: ptr(engine.NewSecret(roleConf)), Mode: ptr(os.FileMode(0o600)),
				}))
			}
			dependsOn = append(dependsOn, engine.AddIn(g, in, &nodetasks.File{
				Path: nodeConfFile, SecretContents: ptr(engine.NewSecret(conf)), Mode: ptr(os.FileMode(0o600)), After: after,
			}))
		}
		engine.AddIn(g, in, &nodetasks.SystemdService{
			Name:       "protokube.service",
			Definition: ptr(protokubeUnit),
			Enabled:    ptr(true),
			Running:    startIf(o.StartProtokube),
			DependsOn:  dependsOn,
		})
	}
	return keystoreFiles, nil
}

// startIf is a service's Running: true to start it, nil to leave it as it runs (never false: no caller stops
// a service).
func startIf(start bool) *bool {
	if start {
		return ptr(true)
	}
	return nil
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
Requires=containerd.service
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

	// protokube starts kubelet itself, each round: its unit neither wants nor waits for kubelet's. Nor does it
	// wait for the network: a round that cannot reach the cloud or DNS fails, and the next one tries again.
	protokubeUnit = `# Managed by kubeup (nodeup).
[Unit]
Description=protokube: claims and mounts this node's etcd volumes, runs etcd, keeps DNS right, keeps kubelet running

[Service]
ExecStart=` + must(execLine(protokubeBinary, "--conf="+nodeConfFile)) + `
Restart=always
RestartSec=5s
RestartPreventExitStatus=` + strconv.Itoa(ProtokubeExitNotControlPlane) + `

[Install]
WantedBy=multi-user.target
`
)

// ProtokubeExitNotControlPlane is the status protokube exits with when its node configuration is not a
// control-plane node's (LSB's "program is not configured"): its unit does not restart it after that status, which
// a restart would only meet again. nodeup restarts protokube.service when it writes the node configuration.
const ProtokubeExitNotControlPlane = 6

// must panics on an error from writing a constant: a programmer's error, found when the package loads.
func must(s string, err error) string {
	if err != nil {
		panic(fmt.Sprintf("model: %v", err))
	}
	return s
}
