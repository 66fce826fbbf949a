package nodegraph

import (
	"kubeup.dev/kubeup/model"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Keys of the node tasks that install the container runtime's files, for the tasks that run them.
var (
	// ContainerdArchiveKey installs containerd, containerd-shim-runc-v2 and ctr in /usr/local/bin.
	ContainerdArchiveKey = engine.Key{Type: "Archive", Name: model.AssetContainerd}
	// RuncAssetKey installs /usr/local/sbin/runc.
	RuncAssetKey = engine.Key{Type: "Asset", Name: model.RuncPath}
	// CNIPluginsArchiveKey installs the CNI plugins in /opt/cni/bin.
	CNIPluginsArchiveKey = engine.Key{Type: "Archive", Name: model.AssetCNIPlugins}
	// CrictlArchiveKey installs /usr/local/bin/crictl.
	CrictlArchiveKey = engine.Key{Type: "Archive", Name: model.AssetCrictl}
)

// addAssetTasks adds to g the tasks that install the assets of nc that a node of its group installs: those with a
// sha256 (NodeConfigAssets), each an Asset (a single file) or an Archive (members of a gzip'd tar). It returns them
// by asset name (AssetKubelet, ...; "images/<name>" for an image), for the services that run them. With leave,
// they are added with the Ignore lifecycle: neither checked nor installed (protokube's rounds: installing is
// nodeup's), yet a service that depends on one sees the same sha256 nodeup's run saw, and is not restarted.
func addAssetTasks[C any](g *engine.Graph[C], in func(C) *nodetasks.Node, nc *model.NodeConfig, leave bool) map[string]engine.Task {
	a := model.NodeConfigAssets(&nc.Cluster.Spec, nc.InstanceGroup.Spec.Role)
	if a == nil {
		return nil
	}
	var opts []engine.AddOption
	if leave {
		opts = append(opts, engine.WithLifecycle(engine.Ignore))
	}
	exec := ptr(os.FileMode(0o755))
	out := map[string]engine.Task{}
	file := func(name, p string, mode *os.FileMode, url, sha string) {
		out[name] = engine.AddIn(g, in, &nodetasks.Asset{Path: p, URL: url, SHA256: sha, Mode: mode}, opts...)
	}
	archive := func(name string, members map[string]string) {
		f := a.File(name)
		out[name] = engine.AddIn(g, in, &nodetasks.Archive{Name: name, URL: f.URL, SHA256: f.SHA256, Members: members, Mode: exec}, opts...)
	}
	for _, name := range model.AssetNames {
		f := a.File(name)
		if f == nil {
			continue
		}
		switch name {
		case model.AssetKubelet:
			file(name, model.KubeletBinary, exec, f.URL, f.SHA256)
		case model.AssetProtokube:
			file(name, model.ProtokubeBinary, exec, f.URL, f.SHA256)
		case model.AssetRunc:
			file(name, model.RuncPath, exec, f.URL, f.SHA256)
		case model.AssetContainerd:
			members := map[string]string{}
			for _, m := range model.ContainerdMembers {
				members[m] = path.Join(model.BinDir, path.Base(m))
			}
			archive(name, members)
		case model.AssetCNIPlugins:
			members := map[string]string{}
			for _, p := range model.CNIPlugins {
				members[p] = path.Join(model.CNIBinDir, p)
			}
			archive(name, members)
		case model.AssetCrictl:
			archive(name, map[string]string{"crictl": model.CrictlBin})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Images)) {
		img := a.Images[name]
		file("images/"+name, model.ImagePath(name), ptr(os.FileMode(0o644)), img.URL, img.SHA256)
	}
	return out
}

// dependsOnAsset is the asset task a service runs, if the graph installs it: the service restarts when its
// sha256 changes.
func dependsOnAsset(assets map[string]engine.Task, name string) []engine.Task {
	if t, ok := assets[name]; ok {
		return []engine.Task{t}
	}
	return nil
}

// runtimeAssets are the asset tasks of assets (addAssetTasks) the container runtime's tasks need: those that
// install containerd's binaries and runc, and the images nc's node preloads with the tasks that install their
// archives.
func runtimeAssets(nc *model.NodeConfig, assets map[string]engine.Task) RuntimeAssets {
	var ra RuntimeAssets
	for _, name := range []string{model.AssetContainerd, model.AssetRunc} {
		ra.Binaries = append(ra.Binaries, dependsOnAsset(assets, name)...)
	}
	for _, img := range model.PreloadImages(nc) {
		source := assets["images/"+strings.TrimSuffix(path.Base(img.Archive), ".tar")] // ImagePath's name
		ra.Images = append(ra.Images, RuntimeImage{Name: img.Name, Archive: img.Archive, Source: source})
	}
	return ra
}
