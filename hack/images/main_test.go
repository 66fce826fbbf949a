package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// buildPause builds ./pause static into dir: a binary an image can hold.
func buildPause(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-o", bin, "./pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./pause: %v\n%s", err, out)
	}
	return bin
}

// An archive is an OCI layout naming the image as the manifests do, and the same binary makes the same archive.
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	bin := buildPause(t, dir)
	var archives [2][]byte
	for i := range archives {
		out := filepath.Join(dir, "out"+string(rune('0'+i)))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		sp, err := parseSpec("registry.k8s.io/pause:3.10.2=" + bin + ":/pause")
		if err != nil {
			t.Fatal(err)
		}
		if err := run(out, specs{sp}); err != nil {
			t.Fatal(err)
		}
		if archives[i], err = os.ReadFile(filepath.Join(out, "pause.tar")); err != nil {
			t.Fatal(err)
		}
		index, err := os.ReadFile(filepath.Join(out, "IMAGES"))
		if err != nil || string(index) != "pause.tar registry.k8s.io/pause:3.10.2\n" {
			t.Errorf("IMAGES: %q, %v", index, err)
		}
		img := readArchive(t, filepath.Join(out, "pause.tar"), "registry.k8s.io/pause:3.10.2")
		if layers, err := img.Layers(); err != nil || len(layers) != 1 {
			t.Errorf("an image with no base: %d layers, %v; want 1", len(layers), err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cfg.Config.Entrypoint, " ") != "/pause" || cfg.OS != "linux" {
			t.Errorf("config: entrypoint %v, os %q", cfg.Config.Entrypoint, cfg.OS)
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two archives of the same binary differ")
	}
}

// readArchive unpacks the archive and returns its one image, which must be annotated with ref.
func readArchive(t *testing.T, archive, ref string) v1.Image {
	t.Helper()
	unpacked := t.TempDir()
	if out, err := exec.Command("tar", "-xf", archive, "-C", unpacked).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	idx, err := layout.ImageIndexFromPath(unpacked)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations[containerdImageName] != ref {
		t.Fatalf("index: %+v", m.Manifests)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// A dynamically linked binary would not start in an image with no libc: refused, named.
func TestDynamicRefused(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sh, _ = filepath.EvalSymlinks(sh)
	if err := static(sh); err == nil || !strings.Contains(err.Error(), sh) {
		t.Errorf("static(%s) = %v, want an error naming it", sh, err)
	}
	if err := static(buildPause(t, t.TempDir())); err != nil {
		t.Errorf("static(pause) = %v", err)
	}
}

func TestParseSpecRefused(t *testing.T) {
	for _, v := range []string{
		"registry.k8s.io/pause:3.10.2",                // no files
		"pause=/bin/pause:/pause",                     // not a full reference
		"registry.k8s.io/pause:3.10.2=/bin/pause",     // no path in the image
		"registry.k8s.io/pause:3.10.2=/bin/p:pause",   // relative
		"registry.k8s.io/pause:3.10.2=/bin/p:/a/../b", // not clean
	} {
		if _, err := parseSpec(v); err == nil {
			t.Errorf("parseSpec(%q) took it", v)
		}
	}
}

// An image given -cmd has those default arguments (agnhost's ["pause"]); one without has none. A -cmd of an image
// no -image names, or a second -cmd of one image, is refused, naming it, and nothing is written.
func TestCommand(t *testing.T) {
	dir := t.TempDir()
	bin := buildPause(t, dir)
	const ref = "registry.k8s.io/e2e-test-images/agnhost:2.56"
	sp, err := parseSpec(ref + "=" + bin + ":/agnhost")
	if err != nil {
		t.Fatal(err)
	}
	var cs commands
	if err := cs.Set(ref + "=pause"); err != nil {
		t.Fatal(err)
	}
	images, err := withCommands(specs{sp}, cs)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := run(out, images); err != nil {
		t.Fatal(err)
	}
	cfg, err := readArchive(t, filepath.Join(out, "agnhost.tar"), ref).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != "/agnhost" || strings.Join(cfg.Config.Cmd, " ") != "pause" {
		t.Errorf("config: entrypoint %q, cmd %q; want [/agnhost] [pause]", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}

	for _, tc := range []struct {
		cmds []string
		want string
	}{
		{[]string{"registry.k8s.io/e2e-test-images/busybox:1.37.0-1=sh"}, "no -image names registry.k8s.io/e2e-test-images/busybox:1.37.0-1"},
		{[]string{ref + "=pause", ref + "=netexec"}, "has default arguments already"},
	} {
		var cs commands
		for _, c := range tc.cmds {
			if err := cs.Set(c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := withCommands(specs{sp}, cs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("withCommands(%q) = %v, want an error saying %q", tc.cmds, err, tc.want)
		}
	}
	for _, v := range []string{ref, ref + "=", "agnhost=pause"} {
		var cs commands
		if err := cs.Set(v); err == nil {
			t.Errorf("-cmd %q taken", v)
		}
	}
}

// imagesCache is the directory `make images` wrote (KUBEUP_IMAGES, which make exports); with none, the test
// skips, loudly, and fails under CI=true.
func imagesCache(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEUP_IMAGES")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KUBEUP_IMAGES is not set, and CI=true: run the tests through make test, which builds the images")
		}
		t.Skip("KUBEUP_IMAGES is not set: make images writes the archives (make test sets it)")
	}
	return dir
}

// modVersion is the version goMod requires of module.
func modVersion(t *testing.T, goMod, module string) string {
	t.Helper()
	b, err := os.ReadFile(goMod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("%s requires no %s", goMod, module)
	return ""
}

// The CoreDNS image `make images` writes is named as kubeadm names it, at the version hack/coredns/go.mod pins,
// and holds a static coredns at /coredns, its entrypoint, which names that version.
func TestCoreDNSImage(t *testing.T) {
	version := modVersion(t, "../coredns/go.mod", "github.com/coredns/coredns")
	bin := binaryImage(t, "coredns.tar", "registry.k8s.io/coredns/coredns:"+version, "/coredns")
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if want := "CoreDNS-" + strings.TrimPrefix(version, "v"); err != nil || !strings.Contains(string(out), want) {
		t.Errorf("/coredns -version: %v, %q; want it to name %s", err, out, want)
	}
}

// The flannel image `make images` writes is named as flannel publishes it, at the version hack/flannel/go.mod
// pins, and holds a static flanneld at /opt/bin/flanneld (upstream's path), its entrypoint, which names that
// version. (cgo: flannel's udp backend needs it on amd64; linked statically all the same.)
func TestFlannelImage(t *testing.T) {
	version := modVersion(t, "../flannel/go.mod", "github.com/flannel-io/flannel")
	bin := binaryImage(t, "flannel.tar", "ghcr.io/flannel-io/flannel:"+version, "/opt/bin/flanneld")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != version {
		t.Errorf("/opt/bin/flanneld --version: %v, %q; want %s", err, out, version)
	}
}

// binaryImage checks that the archive of `make images` is listed in its IMAGES as ref and holds one layer (no
// base) with a static binary at entrypoint, the image's entrypoint, and returns that binary, written out.
func binaryImage(t *testing.T, archive, ref, entrypoint string) string {
	t.Helper()
	dir := imagesCache(t)
	index, err := os.ReadFile(filepath.Join(dir, "IMAGES"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(index), "\n"+archive+" "+ref+"\n") {
		t.Fatalf("%s/IMAGES does not list %s %s:\n%s", dir, archive, ref, index)
	}
	img := readArchive(t, filepath.Join(dir, archive), ref)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != entrypoint {
		t.Errorf("entrypoint %q, want [%s]", cfg.Config.Entrypoint, entrypoint)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v; want 1 (no base)", len(layers), err)
	}
	_, bodies := layerEntries(t, layers[0])
	body, ok := bodies[strings.TrimPrefix(entrypoint, "/")]
	if !ok {
		t.Fatalf("the layer holds no %s, the entrypoint: %v", entrypoint, slices.Sorted(maps.Keys(bodies)))
	}
	bin := filepath.Join(t.TempDir(), path.Base(entrypoint))
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := static(bin); err != nil {
		t.Error(err)
	}
	return bin
}
