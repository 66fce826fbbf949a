// Command images writes the OCI image archives that kubeup's nodes preload (`make images`): one archive per image,
// each an OCI image layout in a tar file that `ctr images import` accepts, named as kubeup's manifests name the
// image. An image is a layer holding static binaries at the paths the manifests run, with PATH set and the first
// binary as its entrypoint, and no default arguments unless -cmd gives them; by default it has no base (no shell,
// no libc). An image given a base (-base) has,
// beneath that layer, a layer of every directory, regular file and symbolic link under a directory of this
// machine (for kube-proxy: iptables and its libraries, unpacked from Debian's packages), with their permissions.
// Archives are reproducible: every timestamp is the Unix epoch, every file owned by root.
//
//	images -out DIR -image REF=FILE:PATH[,FILE:PATH...] ... [-base REF=ROOTDIR ...] [-cmd REF=ARG[,ARG...] ...]
//
// writes DIR/NAME.tar for each REF (NAME is the last element of its repository: registry.k8s.io/kube-apiserver:
// v1.34.2 -> kube-apiserver.tar) and DIR/IMAGES, one "NAME.tar REF" a line.
package main

import (
	"archive/tar"
	"compress/gzip"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// containerdImageName is the annotation containerd's importer names an image by.
const containerdImageName = "io.containerd.image.name"

// imagePath is the PATH of every image: where the binaries are, and where a Debian base keeps its programs
// (iptables is in /usr/sbin).
const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is every timestamp in an image: the same binaries make the same archive.
var epoch = time.Unix(0, 0).UTC()

// spec is one image to write: its reference, the files it holds, the directory its base layer is made of
// ("": no base) and its default arguments (nil: none).
type spec struct {
	ref   name.Tag
	files []file
	base  string
	cmd   []string
}

// file is a binary on this machine and where it goes in the image.
type file struct{ src, dst string }

type specs []spec

func (s *specs) String() string { return fmt.Sprint(len(*s), " images") }

func (s *specs) Set(v string) error {
	sp, err := parseSpec(v)
	if err != nil {
		return err
	}
	*s = append(*s, sp)
	return nil
}

// parseSpec parses REF=FILE:PATH[,FILE:PATH...].
func parseSpec(v string) (spec, error) {
	ref, files, ok := strings.Cut(v, "=")
	if !ok || files == "" {
		return spec{}, fmt.Errorf("-image %q: want REF=FILE:PATH[,FILE:PATH...]", v)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return spec{}, fmt.Errorf("-image %q: %q is not a full image reference with a tag: %w", v, ref, err)
	}
	sp := spec{ref: tag}
	for _, f := range strings.Split(files, ",") {
		src, dst, ok := strings.Cut(f, ":")
		if !ok || src == "" || !path.IsAbs(dst) || path.Clean(dst) != dst {
			return spec{}, fmt.Errorf("-image %q: %q: want FILE:PATH with PATH absolute and clean", v, f)
		}
		sp.files = append(sp.files, file{src: src, dst: dst})
	}
	return sp, nil
}

// archiveName is the file an image is written to: the last element of its repository, .tar.
func (s spec) archiveName() string { return path.Base(s.ref.RepositoryStr()) + ".tar" }

func main() {
	var images specs
	var bs bases
	var cs commands
	out := flag.String("out", "", "the directory to write the archives to (it must exist)")
	flag.Var(&images, "image", "REF=FILE:PATH[,FILE:PATH...]: an image REF holding each FILE at PATH (repeatable)")
	flag.Var(&bs, "base", "REF=ROOTDIR: the image REF (named by -image) has a base layer of the tree under ROOTDIR (repeatable)")
	flag.Var(&cs, "cmd", "REF=ARG[,ARG...]: the image REF (named by -image) runs its entrypoint with these arguments when a container gives none (repeatable)")
	flag.Parse()
	if *out == "" || len(images) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: images -out DIR -image REF=FILE:PATH[,FILE:PATH...] ... [-base REF=ROOTDIR ...] [-cmd REF=ARG[,ARG...] ...]")
		os.Exit(2)
	}
	images, err := withBases(images, bs)
	if err == nil {
		images, err = withCommands(images, cs)
	}
	if err == nil {
		err = run(*out, images)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(out string, images specs) error {
	seen := map[string]string{}
	var index strings.Builder
	for _, sp := range images {
		archive := sp.archiveName()
		if other, ok := seen[archive]; ok {
			return fmt.Errorf("%s and %s would both be written to %s", other, sp.ref, archive)
		}
		seen[archive] = sp.ref.String()
		start := time.Now()
		if err := writeArchive(filepath.Join(out, archive), sp); err != nil {
			return fmt.Errorf("%s: %w", sp.ref, err)
		}
		fmt.Fprintf(os.Stderr, "images: %s -> %s (%s)\n", sp.ref, archive, time.Since(start).Round(time.Millisecond))
		fmt.Fprintf(&index, "%s %s\n", archive, sp.ref)
	}
	return os.WriteFile(filepath.Join(out, "IMAGES"), []byte(index.String()), 0o644)
}

// writeArchive writes sp's image as an OCI image layout in a tar file at dst.
func writeArchive(dst string, sp spec) error {
	work, err := os.MkdirTemp(filepath.Dir(dst), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var layers []v1.Layer
	if sp.base != "" {
		baseFile := filepath.Join(work, "base.tar")
		if err := writeTree(baseFile, sp.base); err != nil {
			return fmt.Errorf("base: %w", err)
		}
		layer, err := layerFromFile(baseFile)
		if err != nil {
			return err
		}
		layers = append(layers, layer)
	}
	layerFile := filepath.Join(work, "layer.tar")
	if err := writeLayer(layerFile, sp.files); err != nil {
		return err
	}
	layer, err := layerFromFile(layerFile)
	if err != nil {
		return err
	}
	img, err := image(append(layers, layer), sp.files[0].dst, sp.cmd)
	if err != nil {
		return err
	}
	lp, err := layout.Write(filepath.Join(work, "layout"), empty.Index)
	if err != nil {
		return err
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	ref := sp.ref.String()
	if err := lp.AppendImage(img, layout.WithPlatform(platform), layout.WithAnnotations(map[string]string{
		containerdImageName:                 ref,
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return err
	}
	return tarDir(filepath.Join(work, "layout"), dst)
}

// layerFromFile is the OCI layer of the tar file at f, gzipped.
func layerFromFile(f string) (v1.Layer, error) {
	return tarball.LayerFromFile(f, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
}

// image is an OCI image of layers (the lowest first), its entrypoint the binary at entrypoint, run with cmd when a
// container gives no arguments.
func image(layers []v1.Layer, entrypoint string, cmd []string) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, layer := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
			Created: v1.Time{Time: epoch}, CreatedBy: "kubeup hack/images",
		}})
		if err != nil {
			return nil, err
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Env = []string{imagePath}
	cfg.Config.Entrypoint = []string{entrypoint}
	cfg.Config.Cmd = cmd
	cfg.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cfg)
}

// writeLayer writes a tar of files at their image paths, with their parent directories, owned by root.
func writeLayer(dst string, files []file) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	dirs := map[string]bool{}
	sorted := append([]file(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].dst < sorted[j].dst })
	for _, fl := range sorted {
		rel := strings.TrimPrefix(fl.dst, "/")
		var parents []string
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		if err := static(fl.src); err != nil {
			return err
		}
		if err := addFile(tw, fl.src, rel, 0o755); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// static refuses an executable that needs a dynamic loader: an image has no base, so it would not start.
func static(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s: not an executable: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: an image has no libc; build it with CGO_ENABLED=0", file)
		}
	}
	return nil
}

// addFile writes the regular file src into tw as name.
func addFile(tw *tar.Writer, src, name string, mode int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: st.Size(), Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, in); err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	return nil
}

// tarDir writes the files under dir, sorted, into a tar file at dst (written beside it, then renamed).
func tarDir(dir, dst string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
		} else {
			err = addFile(tw, p, n, 0o644)
		}
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}
