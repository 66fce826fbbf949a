package nodegraph

import (
	"fmt"
	"kubeup.dev/kubeup/model"
	"os"
	"path"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// BuildNodeGraph returns the graph nodeup converges on a node of the configuration's instance group: the node
// tasks of AddNodeTasks. nodeup starts kubelet on a Node; on the control plane it writes and enables kubelet's
// unit but leaves kubelet to protokube, which makes sure it runs in each round (AddNodeTasks with StartKubelet).
func BuildNodeGraph(nc *model.NodeConfig) (*engine.Graph[*nodetasks.Node], error) {
	g := engine.NewGraph[*nodetasks.Node]()
	o := NodeTasksOptions{
		StartKubelet:   nc.InstanceGroup == nil || nc.InstanceGroup.Spec.Role != model.RoleControlPlane,
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
	// StartProtokube (where protokube runs: model.NodeRunsProtokube) starts protokube.service when it is stopped, and restarts it when its unit
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
// plane (and on the workers that run protokube, model.NodeRunsProtokube), protokube's unit and the node
// configuration it reads (/etc/kubeup/node.conf, nc as Encode writes it).
// nodeup's graph holds them alone (BuildNodeGraph); protokube adds
// them to each round's graph, whose world is made of the node and the cloud.
func AddNodeTasks[C any](g *engine.Graph[C], in func(C) *nodetasks.Node, nc *model.NodeConfig, o NodeTasksOptions) (keystoreFiles []engine.Task, err error) {
	if nc.Cluster == nil || nc.InstanceGroup == nil {
		return nil, fmt.Errorf("node configuration: cluster and instanceGroup are required")
	}
	c, ig := nc.Cluster, nc.InstanceGroup
	s := &c.Spec
	if s.Kubelet == nil || s.KubeProxy == nil || s.Containerd == nil {
		return nil, fmt.Errorf("node configuration of %s: the cluster spec is not complete (no kubelet, kubeProxy or containerd)", ig.Metadata.Name)
	}
	switch ig.Spec.Role {
	case model.RoleControlPlane, model.RoleNode:
	default:
		return nil, fmt.Errorf("node configuration of %s: spec.role %q is not a role: want %s or %s", ig.Metadata.Name, ig.Spec.Role, model.RoleControlPlane, model.RoleNode)
	}
	controlPlane := ig.Spec.Role == model.RoleControlPlane
	if controlPlane && (s.KubeAPIServer == nil || s.KubeControllerManager == nil || s.KubeScheduler == nil || nc.Protokube == nil) {
		return nil, fmt.Errorf("node configuration of %s: the control plane's configuration is not complete", ig.Metadata.Name)
	}
	envText, err := model.KubeletEnv(model.KubeletFlags(s.Kubelet, ig))
	if err != nil {
		return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
	}
	// protokube runs on the control plane, and on the workers of a local cluster whose pod network is kubenet
	// (their routes to the other nodes' pod ranges: model.NodeRunsProtokube).
	protokube := model.NodeRunsProtokube(s, ig.Spec.Role)
	var conf, roleConf string
	if protokube && !o.LeaveNodeConf {
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
		addManifest(KubeAPIServerPod(s.KubeAPIServer))
		addManifest(kubeControllerManagerPod(s.KubeControllerManager))
		addManifest(kubeSchedulerPod(s.KubeScheduler))
	}
	addManifest(kubeProxyPod(s.KubeProxy))

	// The pods' traffic leaving the cluster leaves with the node's address (docs/networking.md).
	if n := s.Networking; n != nil && n.PodCIDR != "" && n.NonMasqueradeCIDR != "" {
		engine.AddIn(g, in, &nodetasks.PodMasquerade[*nodetasks.Node]{Name: "pod-egress", Source: n.PodCIDR, Except: n.NonMasqueradeCIDR})
	}

	// containerd runs, with the images preloaded, before kubelet starts: it restarts when one of its binaries
	// changes, and each image the node preloads is imported once its archive is installed.
	runtime, err := addRuntimeTasks(g, in, s, runtimeAssets(nc, assets))
	if err != nil {
		return nil, fmt.Errorf("node configuration of %s: %w", ig.Metadata.Name, err)
	}
	env := engine.AddIn(g, in, &nodetasks.File{
		Path:     model.KubeletEnvFile,
		Contents: ptr(envText),
		Mode:     ptr(os.FileMode(0o644)),
	})
	engine.AddIn(g, in, &nodetasks.SystemdService{
		Name:       "kubelet.service",
		Definition: ptr(model.KubeletUnit),
		Enabled:    ptr(true),
		Running:    startIf(o.StartKubelet),
		// kubelet restarts when its flags or its binary change; it picks up changed manifests by itself, without
		// a restart. containerd's service and the image imports only order it.
		DependsOn: append(append([]engine.Task{env}, dependsOnAsset(assets, model.AssetKubelet)...), runtime.after()...),
	})

	if protokube {
		// protokube reads the node configuration nodeup verified, from a copy of its own: nodeup's may be a URL
		// whose credentials protokube need not have, or a file a boot script replaces. 0600: the configuration
		// is the cluster's spec.
		// A configuration that names its role's (NodeConfig.RoleConfig) finds it beside it: that copy is written
		// first, so that protokube never reads a node.conf whose role's configuration is not there yet.
		dependsOn := dependsOnAsset(assets, model.AssetProtokube)
		if !o.LeaveNodeConf {
			var after []engine.Task
			if roleConf != "" {
				after = append(after, engine.AddIn(g, in, &nodetasks.File{
					Path: path.Join(path.Dir(model.NodeConfFile), nc.RoleConfig.Object), SecretContents: ptr(engine.NewSecret(roleConf)), Mode: ptr(os.FileMode(0o600)),
				}))
			}
			dependsOn = append(dependsOn, engine.AddIn(g, in, &nodetasks.File{
				Path: model.NodeConfFile, SecretContents: ptr(engine.NewSecret(conf)), Mode: ptr(os.FileMode(0o600)), After: after,
			}))
		}
		engine.AddIn(g, in, &nodetasks.SystemdService{
			Name:       "protokube.service",
			Definition: ptr(model.ProtokubeUnit),
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
