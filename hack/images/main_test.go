package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
