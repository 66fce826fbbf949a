package nodegraph

import (
	"kubeup.dev/kubeup/model"
	"os"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// RuntimeImage is an image nodeup imports into containerd before kubelet starts: its reference as the manifests
// name it, the node path of its OCI archive, and the task that installs the archive (nil: none of the graph).
type RuntimeImage struct {
	Name    string
	Archive string
	Source  engine.Task
}

// RuntimeAssets are what the assets install for the container runtime, as the runtime's tasks need them: the
// tasks that install containerd's binaries (containerd, its shim, runc: containerd restarts when one of them
// changes, and starts after them), and the images to import.
type RuntimeAssets struct {
	Binaries []engine.Task
	Images   []RuntimeImage
}

// runtimeTasks are the tasks addRuntimeTasks adds that kubelet must come after: containerd's service and the
// image imports.
type runtimeTasks struct {
	service *nodetasks.SystemdService
	imports []engine.Task
}

// after is what kubelet.service comes after.
func (r runtimeTasks) after() []engine.Task {
	return append([]engine.Task{r.service}, r.imports...)
}

// addRuntimeTasks adds to g the container runtime's configuration (containerd's, the CNI template, crictl's),
// containerd's unit, started, and restarted when its configuration or a binary of a.Binaries changes, and the
// import of each image of a.Images into containerd once it runs.
func addRuntimeTasks[C any](g *engine.Graph[C], in func(C) *nodetasks.Node, s *model.ClusterSpec, a RuntimeAssets) (runtimeTasks, error) {
	config, err := model.ContainerdConfig(s)
	if err != nil {
		return runtimeTasks{}, err
	}
	crictl, err := model.CrictlConfigText(s.Kubelet.ContainerRuntimeEndpoint)
	if err != nil {
		return runtimeTasks{}, err
	}
	file := func(p, contents string) engine.Task {
		return engine.AddIn(g, in, &nodetasks.File{Path: p, Contents: ptr(contents), Mode: ptr(os.FileMode(0o644))})
	}
	conf := file(model.ContainerdConfigFile, config)
	template := file(model.CNIConfigTemplate, model.CNITemplateText(model.PodMTU(s)))
	file(model.CrictlConfig, crictl)
	var r runtimeTasks
	r.service = engine.AddIn(g, in, &nodetasks.SystemdService{
		Name:       model.ContainerdUnit,
		Definition: ptr(model.ContainerdUnitText),
		Enabled:    ptr(true),
		Running:    ptr(true),
		DependsOn:  append([]engine.Task{conf, template}, a.Binaries...),
	})
	sock, _ := strings.CutPrefix(s.Kubelet.ContainerRuntimeEndpoint, "unix://")
	for _, img := range a.Images {
		after := []engine.Task{r.service}
		if img.Source != nil {
			after = append(after, img.Source)
		}
		r.imports = append(r.imports, engine.AddIn(g, in, &nodetasks.ImageImport{
			Name: img.Name, Archive: img.Archive, Address: sock, Ctr: model.CtrBinary, Pinned: true, After: after,
		}))
	}
	return r, nil
}
