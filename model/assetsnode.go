package model

import (
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// assetFiles are the node paths nodeup installs assets at, outside the directories kubeup owns: the binaries in
// /usr/local/bin, runc in /usr/local/sbin, the CNI plugins in /opt/cni/bin (images go to ImageDir, in
// KubeupStateDir). NodeupFiles lists them.
var assetFiles = func() []string {
	out := []string{BinDir + "/kubelet", BinDir + "/protokube", BinDir + "/crictl", RuncPath}
	for _, m := range containerdMembers {
		out = append(out, path.Join(BinDir, path.Base(m)))
	}
	for _, p := range CNIPlugins {
		out = append(out, path.Join(CNIBinDir, p))
	}
	return out
}()

// Keys of the node tasks that install the container runtime's files, for the tasks that run them.
var (
	// ContainerdArchiveKey installs containerd, containerd-shim-runc-v2 and ctr in /usr/local/bin.
	ContainerdArchiveKey = engine.Key{Type: "Archive", Name: AssetContainerd}
	// RuncAssetKey installs /usr/local/sbin/runc.
	RuncAssetKey = engine.Key{Type: "Asset", Name: RuncPath}
	// CNIPluginsArchiveKey installs the CNI plugins in /opt/cni/bin.
	CNIPluginsArchiveKey = engine.Key{Type: "Archive", Name: AssetCNIPlugins}
	// CrictlArchiveKey installs /usr/local/bin/crictl.
	CrictlArchiveKey = engine.Key{Type: "Archive", Name: AssetCrictl}
)

// addAssetTasks adds to g the tasks that install the assets of nc that a node of its group installs: those with a
// sha256 (NodeConfigAssets), each an Asset (a single file) or an Archive (members of a gzip'd tar). It returns them
// by asset name (AssetKubelet, ...; "images/<name>" for an image), for the services that run them. With leave,
// they are added with the Ignore lifecycle: neither checked nor installed (protokube's rounds: installing is
// nodeup's), yet a service that depends on one sees the same sha256 nodeup's run saw, and is not restarted.
func addAssetTasks[C any](g *engine.Graph[C], in func(C) *nodetasks.Node, nc *NodeConfig, leave bool) map[string]engine.Task {
	a := NodeConfigAssets(&nc.Cluster.Spec, nc.InstanceGroup.Spec.Role)
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
	for _, name := range AssetNames {
		f := a.File(name)
		if f == nil {
			continue
		}
		switch name {
		case AssetKubelet:
			file(name, kubeletBinary, exec, f.URL, f.SHA256)
		case AssetProtokube:
			file(name, protokubeBinary, exec, f.URL, f.SHA256)
		case AssetRunc:
			file(name, RuncPath, exec, f.URL, f.SHA256)
		case AssetContainerd:
			members := map[string]string{}
			for _, m := range containerdMembers {
				members[m] = path.Join(BinDir, path.Base(m))
			}
			archive(name, members)
		case AssetCNIPlugins:
			members := map[string]string{}
			for _, p := range CNIPlugins {
				members[p] = path.Join(CNIBinDir, p)
			}
			archive(name, members)
		case AssetCrictl:
			archive(name, map[string]string{"crictl": CrictlBin})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Images)) {
		img := a.Images[name]
		file("images/"+name, ImagePath(name), ptr(os.FileMode(0o644)), img.URL, img.SHA256)
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
func runtimeAssets(nc *NodeConfig, assets map[string]engine.Task) RuntimeAssets {
	var ra RuntimeAssets
	for _, name := range []string{AssetContainerd, AssetRunc} {
		ra.Binaries = append(ra.Binaries, dependsOnAsset(assets, name)...)
	}
	for _, img := range PreloadImages(nc) {
		source := assets["images/"+strings.TrimSuffix(path.Base(img.Archive), ".tar")] // ImagePath's name
		ra.Images = append(ra.Images, RuntimeImage{Name: img.Name, Archive: img.Archive, Source: source})
	}
	return ra
}
