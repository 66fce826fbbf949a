package model

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/internal/version"
)

// AssetsSpec names every file a node installs (spec.assets): the binaries, the container runtime's archives and
// the container images the node preloads, each by URL and sha256. Defaulting fills in the URLs, from the
// Kubernetes version and kubeup's own version (upstream's downloads, or FileRepository's); kubeup cannot know a
// default's sha256, and a node never downloads a file without one: `kubeup assets mirror` copies the files into
// a mirror and records both.
type AssetsSpec struct {
	// FileRepository moves every default URL to a mirror the operator runs: a default URL is then
	// <fileRepository>/<the asset's relative path> (AssetRelPath). http://, https://, file:///dir, s3://bucket/path
	// or gs://bucket/path, as the state store.
	FileRepository string `json:"fileRepository,omitempty"`
	// Kubelet is kubelet's binary, installed at /usr/local/bin/kubelet.
	Kubelet *AssetSpec `json:"kubelet,omitempty"`
	// Containerd is containerd's release archive (containerd-<version>-linux-amd64.tar.gz), of which
	// bin/containerd, bin/containerd-shim-runc-v2 and bin/ctr are installed in /usr/local/bin.
	Containerd *AssetSpec `json:"containerd,omitempty"`
	// Runc is runc's binary (runc.amd64), installed at /usr/local/sbin/runc.
	Runc *AssetSpec `json:"runc,omitempty"`
	// CNIPlugins is the CNI plugins' release archive (cni-plugins-linux-amd64-<version>.tgz, flat), of which
	// CNIPlugins are installed in /opt/cni/bin.
	CNIPlugins *AssetSpec `json:"cniPlugins,omitempty"`
	// Crictl is crictl's release archive (crictl-<version>-linux-amd64.tar.gz), whose crictl is installed in
	// /usr/local/bin.
	Crictl *AssetSpec `json:"crictl,omitempty"`
	// Protokube is protokube's linux/amd64 binary, installed at /usr/local/bin/protokube on the control plane, and on the
	// workers of a local cluster whose pod network is kubenet (NodeRunsProtokube).
	Protokube *AssetSpec `json:"protokube,omitempty"`
	// Images are the container images nodes preload, by short name (pause, kube-proxy, coredns, etcd,
	// kube-apiserver, kube-controller-manager, kube-scheduler): OCI image archives, installed at
	// /var/lib/kubeup/images/<name>.tar. pause, kube-proxy and coredns (when the addon is enabled) on every node,
	// the others on the control plane.
	Images map[string]*ImageAssetSpec `json:"images,omitempty"`
}

// AssetSpec is one file by URL and sha256.
type AssetSpec struct {
	// URL is where the file is downloaded from: http://, https://, file:///path, s3://bucket/key or gs://bucket/key.
	URL string `json:"url,omitempty"`
	// SHA256 is the file's sha256 in lower-case hex. Without it, no node downloads the file.
	SHA256 string `json:"sha256,omitempty"`
}

// ImageAssetSpec is one container image's OCI archive, and the image reference the manifests name it by.
type ImageAssetSpec struct {
	// Image is the image reference, exactly as the manifests kubeup writes name it: registry.k8s.io/pause:3.10.2.
	Image string `json:"image,omitempty"`
	// URL is where the archive is downloaded from. There is no upstream download of an image archive: without
	// fileRepository, the default is none, and `kubeup assets mirror --from DIR` sets it.
	URL string `json:"url,omitempty"`
	// SHA256 is the archive's sha256 in lower-case hex. Without it, no node downloads the archive.
	SHA256 string `json:"sha256,omitempty"`
}

// Versions of what nodes run besides Kubernetes: those hack/runtime-binaries builds.
const (
	ContainerdVersion = "2.4.2"
	RuncVersion       = "1.5.3"
	CNIPluginsVersion = "1.10.0"
	CrictlVersion     = "1.37.0"
	// PauseImage is the pod sandbox's image, which containerd's configuration names.
	PauseImage = defaultRegistry + "/pause:3.10.2"
)

// Where nodeup installs the assets on a node.
const (
	BinDir        = "/usr/local/bin"
	RuncPath      = "/usr/local/sbin/runc"
	CNIBinDir     = "/opt/cni/bin"
	ImageDir      = KubeupStateDir + "/images"
	ContainerdBin = BinDir + "/containerd"
	CrictlBin     = BinDir + "/crictl"
)

// CNIPlugins are the CNI plugins nodeup installs from the plugins' archive.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// containerdMembers are the members of containerd's archive nodeup installs, in /usr/local/bin.
var ContainerdMembers = []string{"bin/containerd", "bin/containerd-shim-runc-v2", "bin/ctr"}

// Images nodes preload, by their short name in spec.assets.images.
const (
	ImagePause   = "pause"
	ImageEtcd    = "etcd"
	imageNodeAll = "every node"
)

// The single-file and archive assets by their field name in spec.assets.
const (
	AssetKubelet    = "kubelet"
	AssetContainerd = "containerd"
	AssetRunc       = "runc"
	AssetCNIPlugins = "cniPlugins"
	AssetCrictl     = "crictl"
	AssetProtokube  = "protokube"
)

// AssetNames are the field names of spec.assets' files, in order.
var AssetNames = []string{AssetKubelet, AssetContainerd, AssetRunc, AssetCNIPlugins, AssetCrictl, AssetProtokube}

// file returns the field of a that holds the asset name.
func (a *AssetsSpec) file(name string) **AssetSpec {
	switch name {
	case AssetKubelet:
		return &a.Kubelet
	case AssetContainerd:
		return &a.Containerd
	case AssetRunc:
		return &a.Runc
	case AssetCNIPlugins:
		return &a.CNIPlugins
	case AssetCrictl:
		return &a.Crictl
	case AssetProtokube:
		return &a.Protokube
	}
	panic("model: no asset " + name) // a programmer's error: names come from AssetNames
}

// SetFile sets the asset of spec.assets named name (one of AssetNames).
func (a *AssetsSpec) SetFile(name string, f *AssetSpec) { *a.file(name) = f }

// File returns the asset of spec.assets named name (one of AssetNames); nil when it is not set.
func (a *AssetsSpec) File(name string) *AssetSpec {
	if a == nil {
		return nil
	}
	return *a.file(name)
}

func (a *AssetsSpec) image(name string) *ImageAssetSpec {
	if a == nil {
		return nil
	}
	return a.Images[name]
}

// AssetRelPath is where an asset lives below a mirror (fileRepository, or the state store's <cluster>/assets):
// its base name is the file's upstream name, which `kubeup assets mirror --from DIR` looks for in DIR. name is
// one of AssetNames, or "images/<short name>" for an image.
func AssetRelPath(s *ClusterSpec, name string) string {
	kv := "v" + strings.TrimPrefix(s.KubernetesVersion, "v")
	switch name {
	case AssetKubelet:
		return path.Join("kubernetes", kv, "bin/linux/amd64/kubelet")
	case AssetContainerd:
		return path.Join("containerd", "v"+ContainerdVersion, "containerd-"+ContainerdVersion+"-linux-amd64.tar.gz")
	case AssetRunc:
		return path.Join("runc", "v"+RuncVersion, "runc.amd64")
	case AssetCNIPlugins:
		return path.Join("cni-plugins", "v"+CNIPluginsVersion, "cni-plugins-linux-amd64-v"+CNIPluginsVersion+".tgz")
	case AssetCrictl:
		return path.Join("crictl", "v"+CrictlVersion, "crictl-v"+CrictlVersion+"-linux-amd64.tar.gz")
	case AssetProtokube: // the build of the cluster's cloud: protokube-aws links the aws SDK only
		return path.Join("kubeup", version.Version, NodeBinary(s.CloudProvider, "protokube"))
	}
	short := strings.TrimPrefix(name, "images/")
	tag := "latest"
	if img := s.Assets.image(short); img != nil {
		if _, t, ok := strings.Cut(img.Image[strings.LastIndex(img.Image, "/")+1:], ":"); ok {
			tag = t
		}
	}
	return path.Join("images", short, tag, short+".tar")
}

// upstreamURL is the default URL of an asset without fileRepository: upstream's download; "" for an image.
func upstreamURL(s *ClusterSpec, name string) string {
	kv := "v" + strings.TrimPrefix(s.KubernetesVersion, "v")
	gh := "https://github.com/"
	switch name {
	case AssetKubelet:
		return "https://dl.k8s.io/release/" + kv + "/bin/linux/amd64/kubelet"
	case AssetContainerd:
		return gh + "containerd/containerd/releases/download/v" + ContainerdVersion + "/containerd-" + ContainerdVersion + "-linux-amd64.tar.gz"
	case AssetRunc:
		return gh + "opencontainers/runc/releases/download/v" + RuncVersion + "/runc.amd64"
	case AssetCNIPlugins:
		return gh + "containernetworking/plugins/releases/download/v" + CNIPluginsVersion + "/cni-plugins-linux-amd64-v" + CNIPluginsVersion + ".tgz"
	case AssetCrictl:
		return gh + "kubernetes-sigs/cri-tools/releases/download/v" + CrictlVersion + "/crictl-v" + CrictlVersion + "-linux-amd64.tar.gz"
	case AssetProtokube:
		return gh + "kubeup-dev/kubeup/releases/download/" + version.Version + "/" + NodeBinary(s.CloudProvider, "protokube") + "-linux-amd64"
	}
	return ""
}

// defaultImages are the images nodes preload, by short name, from the complete spec's components: pause,
// kube-proxy's, an enabled CoreDNS addon's (coredns) and, under the flannel pod network, flannel's on every node,
// etcd's and the control plane's components' on the control plane. An etcd cluster whose image is not the
// first's adds etcd-<its name>.
func defaultImages(s *ClusterSpec) map[string]string {
	out := map[string]string{ImagePause: PauseImage}
	if s.KubeProxy != nil {
		out["kube-proxy"] = s.KubeProxy.Image
	}
	if s.KubeAPIServer != nil {
		out["kube-apiserver"] = s.KubeAPIServer.Image
	}
	if s.KubeControllerManager != nil {
		out["kube-controller-manager"] = s.KubeControllerManager.Image
	}
	if s.KubeScheduler != nil {
		out["kube-scheduler"] = s.KubeScheduler.Image
	}
	if coreDNSEnabled(s) {
		out[AddonCoreDNS] = DefaultCoreDNSImage
		if a := s.Addons; a != nil && a.CoreDNS != nil && a.CoreDNS.Image != "" {
			out[AddonCoreDNS] = a.CoreDNS.Image
		}
	}
	if flannelEnabled(s) {
		out[AddonFlannel] = flannelImage(s)
	}
	for _, e := range s.EtcdClusters {
		switch first, ok := out[ImageEtcd]; {
		case !ok:
			out[ImageEtcd] = e.Image
		case first != e.Image:
			out[ImageEtcd+"-"+e.Name] = e.Image
		}
	}
	return out
}

// imageRole is the role of the nodes that preload an image: every node for pause, kube-proxy, CoreDNS (its
// pods may run on any node) and flannel (a pod on every node), else the control plane.
func imageRole(name string) string {
	if name == ImagePause || name == "kube-proxy" || name == AddonCoreDNS || name == AddonFlannel {
		return imageNodeAll
	}
	return RoleControlPlane
}

// DefaultAssetURL is the URL an asset gets by default: <fileRepository>/<AssetRelPath> when fileRepository is
// set, else upstream's download ("" for an image: upstream publishes no image archives). name is one of
// AssetNames, or "images/<short name>".
func DefaultAssetURL(s *ClusterSpec, name string) string {
	if s.Assets != nil && s.Assets.FileRepository != "" {
		return strings.TrimSuffix(s.Assets.FileRepository, "/") + "/" + AssetRelPath(s, name)
	}
	return upstreamURL(s, name)
}

// MirrorURL is where `kubeup assets mirror` puts an asset: <spec.configBase>/assets/<AssetRelPath>.
func MirrorURL(s *ClusterSpec, name string) string {
	return strings.TrimSuffix(s.ConfigBase, "/") + "/assets/" + AssetRelPath(s, name)
}

// ImageRefs are the images nodes preload, by short name, as the complete spec's manifests name them.
func ImageRefs(s *ClusterSpec) map[string]string { return defaultImages(s) }

// completeAssets fills in spec.assets: every file's and image's default URL (upstream's, or fileRepository's),
// and each image's reference from the components' (after completeComponents). A value set is kept; no sha256 is
// ever defaulted.
func completeAssets(s *ClusterSpec) {
	if s.Assets == nil {
		s.Assets = &AssetsSpec{}
	}
	a := s.Assets
	def := func(name string) string { return DefaultAssetURL(s, name) }
	for _, name := range AssetNames {
		f := a.file(name)
		if *f == nil {
			*f = &AssetSpec{}
		}
		setDefault(&(*f).URL, def(name))
	}
	if a.Images == nil {
		a.Images = map[string]*ImageAssetSpec{}
	}
	for name, image := range defaultImages(s) {
		img := a.Images[name]
		if img == nil {
			img = &ImageAssetSpec{}
			a.Images[name] = img
		}
		setDefault(&img.Image, image)
	}
	for name, img := range a.Images {
		if img != nil {
			setDefault(&img.URL, def("images/"+name))
		}
	}
}

// assetURLSchemes are the schemes an asset's URL may have: the web's and the state store's.
var assetURLSchemes = []string{"http", "https", "file", "s3", "gs"}

// assetURLProblem checks an asset's URL (or fileRepository): one of assetURLSchemes, with a host (http, https,
// s3, gs) or an absolute path (file), printable, no user, query or fragment.
func assetURLProblem(v string) string {
	u, err := url.Parse(v)
	bad := err != nil || !slices.Contains(assetURLSchemes, u.Scheme) || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(v, " \t\r\n\"'`\\$") || (u.Scheme == "file" && (u.Host != "" || !strings.HasPrefix(u.Path, "/"))) ||
		(u.Scheme != "file" && u.Host == "")
	for _, r := range v {
		bad = bad || r < 0x20 || r == 0x7f
	}
	if bad {
		return fmt.Sprintf("%q is not an asset URL: want https://host/path, http://host/path, file:///path, s3://bucket/key or gs://bucket/key, without whitespace, quotes, backslashes, $, user, query or fragment", v)
	}
	return ""
}

// sha256Problem checks a sha256 the spec sets.
func sha256Problem(v string) string {
	if v != "" && !isSHA256Hex(v) {
		return fmt.Sprintf("%q is not a sha256: want 64 lower-case hex digits (sha256sum FILE)", v)
	}
	return ""
}

// validateAssets checks spec.assets: URLs, sha256s, images by name. A file or image left out is not a problem
// (a node configuration carries only those with a sha256: NodeConfigAssets); one set must be whole enough to be
// downloaded.
func validateAssets(ps *problems, s *ClusterSpec) {
	a := s.Assets
	if a == nil {
		return
	}
	if a.FileRepository != "" {
		check(ps, "spec.assets.fileRepository", assetURLProblem(a.FileRepository))
	}
	for _, name := range AssetNames {
		f := a.File(name)
		if f == nil {
			continue
		}
		p := "spec.assets." + name
		switch {
		case f.URL != "":
			check(ps, p+".url", assetURLProblem(f.URL))
		case f.SHA256 != "":
			ps.add(p+".url", "required with sha256: the URL of the file whose sha256 it is")
		}
		check(ps, p+".sha256", sha256Problem(f.SHA256))
	}
	want := defaultImages(s)
	// A disabled addon's image may stay (mirrored before, for when it is enabled again): no node preloads it.
	want[AddonCoreDNS] = ""
	for _, name := range slices.Sorted(maps.Keys(a.Images)) {
		img := a.Images[name]
		p := "spec.assets.images." + name
		if _, ok := want[name]; !ok {
			ps.add(p, "is not an image kubeup preloads: want one of %s", strings.Join(slices.Sorted(maps.Keys(want)), ", "))
			continue
		}
		if img == nil {
			continue
		}
		switch {
		case img.URL != "":
			check(ps, p+".url", assetURLProblem(img.URL))
		case img.SHA256 != "":
			ps.add(p+".url", "required with sha256: the URL of the archive whose sha256 it is")
		}
		check(ps, p+".sha256", sha256Problem(img.SHA256))
	}
}

// AssetWarnings lists what no node will install as the complete spec's spec.assets means it: every file and image
// without a sha256 (no node downloads it), at its sha256's path; and every file that `kubeup assets mirror`
// mirrored for another version than the spec's now (its URL is in the cluster's mirror, <configBase>/assets/,
// but not at the asset's path for this version), at its url's path. Each names the fix. `kubeup update cluster`
// and `kubeup validate cluster` print them as warnings.
func AssetWarnings(c *Cluster) []Problem {
	s := &c.Spec
	a := s.Assets
	if a == nil {
		return nil
	}
	var ps problems
	fix := "run `kubeup assets mirror " + c.Metadata.Name + " --yes` (with --from DIR for files this machine holds) to copy it into a mirror and record its sha256, or set it"
	mirror := strings.TrimSuffix(s.ConfigBase, "/") + "/assets/"
	for _, name := range AssetNames {
		f := a.File(name)
		switch {
		case f == nil:
		case f.SHA256 == "":
			ps.add("spec.assets."+name+".sha256", "empty: no node downloads %s (%s) without one; %s", name, shownURL(f.URL), fix)
		case s.ConfigBase != "" && strings.HasPrefix(f.URL, mirror) && f.URL != MirrorURL(s, name):
			ps.add("spec.assets."+name+".url", "%s was mirrored for another version than this spec's (%s): nodes keep installing it; run `kubeup assets mirror %s --yes` again",
				f.URL, MirrorURL(s, name), c.Metadata.Name)
		}
	}
	refs := defaultImages(s)
	for _, name := range slices.Sorted(maps.Keys(a.Images)) {
		img := a.Images[name]
		_, used := refs[name]
		switch {
		case img == nil, !used: // a disabled addon's image: no node preloads it, whatever it is
		case img.SHA256 == "":
			ps.add("spec.assets.images."+name+".sha256", "empty: no node preloads %s (%s) without one; %s", img.Image, shownURL(img.URL), fix)
		case img.Image != refs[name]:
			ps.add("spec.assets.images."+name+".image", "%s, but the manifests name %s: the archive holds the image it was mirrored for, and no node preloads it; run `kubeup assets mirror %s --yes` again",
				Echo(img.Image), Echo(refs[name]), c.Metadata.Name)
		}
	}
	return ps.list
}

func shownURL(u string) string {
	if u == "" {
		return "no URL"
	}
	return u
}

// NodeConfigAssets is spec.assets of a complete spec as a node configuration carries it: only the files and images
// that have a sha256 (the others no node downloads), for the role's nodes (protokube only where the role's nodes
// run it, NodeRunsProtokube; the control plane's images on the control plane only), and only the images whose reference is the one the manifests name (an
// archive mirrored for another version holds an image no pod runs). nil when none is left, so that a cluster
// with nothing mirrored writes the node configurations it wrote before spec.assets existed.
func NodeConfigAssets(s *ClusterSpec, role string) *AssetsSpec {
	a := s.Assets
	if a == nil {
		return nil
	}
	refs := defaultImages(s)
	out := &AssetsSpec{}
	some := false
	for _, name := range AssetNames {
		if f := a.File(name); f != nil && f.SHA256 != "" && (name != AssetProtokube || NodeRunsProtokube(s, role)) {
			*out.file(name) = &AssetSpec{URL: f.URL, SHA256: f.SHA256}
			some = true
		}
	}
	for name, img := range a.Images {
		if img != nil && img.SHA256 != "" && img.Image == refs[name] && (imageRole(name) == imageNodeAll || role == RoleControlPlane) {
			if out.Images == nil {
				out.Images = map[string]*ImageAssetSpec{}
			}
			out.Images[name] = &ImageAssetSpec{Image: img.Image, URL: img.URL, SHA256: img.SHA256}
			some = true
		}
	}
	if !some {
		return nil
	}
	return out
}

// PreloadImage is one image a node preloads: its reference, as the manifests name it, and the node path of the
// OCI archive nodeup installs (ImageDir/<short name>.tar). The runtime imports it.
type PreloadImage struct {
	Name    string // image reference
	Archive string // node path of the .tar
}

// PreloadImages are the images a node of nc's instance group preloads, sorted by archive path: those its
// configuration carries that nodeup installs (NodeConfigAssets: a sha256, the node's role, the reference the
// manifests name).
func PreloadImages(nc *NodeConfig) []PreloadImage {
	if nc == nil || nc.Cluster == nil || nc.InstanceGroup == nil {
		return nil
	}
	a := NodeConfigAssets(&nc.Cluster.Spec, nc.InstanceGroup.Spec.Role)
	if a == nil {
		return nil
	}
	var out []PreloadImage
	for _, name := range slices.Sorted(maps.Keys(a.Images)) {
		out = append(out, PreloadImage{Name: a.Images[name].Image, Archive: ImagePath(name)})
	}
	return out
}

// ImagePath is where nodeup installs the archive of image name (a key of spec.assets.images).
func ImagePath(name string) string { return path.Join(ImageDir, name+".tar") }

// assetFiles are the node paths nodeup installs assets at, outside the directories kubeup owns: the binaries in
// /usr/local/bin, runc in /usr/local/sbin, the CNI plugins in /opt/cni/bin (images go to ImageDir, in
// KubeupStateDir). NodeupFiles lists them.
var assetFiles = func() []string {
	out := []string{BinDir + "/kubelet", BinDir + "/protokube", BinDir + "/crictl", RuncPath}
	for _, m := range ContainerdMembers {
		out = append(out, path.Join(BinDir, path.Base(m)))
	}
	for _, p := range CNIPlugins {
		out = append(out, path.Join(CNIBinDir, p))
	}
	return out
}()
