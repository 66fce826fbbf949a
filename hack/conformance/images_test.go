package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ociImage is what an archive of hack/images holds: its one image's config and its layers, unpacked in order.
func ociImage(t *testing.T, archive string) (entrypoint, cmd []string, root string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	blob := func(digest string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	type descriptor struct{ Digest string }
	var index struct{ Manifests []descriptor }
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err == nil {
		err = json.Unmarshal(b, &index)
	}
	if err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(index.Manifests))
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	blob(index.Manifests[0].Digest, &manifest)
	var config struct {
		Config struct{ Entrypoint, Cmd []string }
	}
	blob(manifest.Config.Digest, &config)
	root = filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range manifest.Layers {
		layer := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(l.Digest, "sha256:"))
		if out, err := exec.Command("tar", "-xzf", layer, "-C", root).CombinedOutput(); err != nil {
			t.Fatalf("tar -xzf layer: %v\n%s", err, out)
		}
	}
	return config.Config.Entrypoint, config.Config.Cmd, root
}

// The agnhost image make conformance-deps wrote (KUBEUP_CONFORMANCE_IMAGES) runs /agnhost pause by default, and holds the programs the focus's tests run in agnhost
// containers by name, found on the image's PATH: sh and seq (busybox), dig, curl, and an nc that is netcat-openbsd
// (the Services tests run nc -v -t -w 2 and nc -v -u -w 2, which busybox's nc does not take).
func TestAgnhostImage(t *testing.T) {
	dir := os.Getenv("KUBEUP_CONFORMANCE_IMAGES")
	if dir == "" {
		t.Fatal("KUBEUP_CONFORMANCE_IMAGES is not set: make conformance-deps writes the images and runs this test (make test leaves it out)")
	}
	if _, err := os.Stat(filepath.Join(dir, "IMAGES")); err != nil {
		t.Fatalf("%s/IMAGES: %v: make conformance-deps writes the images", dir, err)
	}
	entrypoint, cmd, root := ociImage(t, filepath.Join(dir, "agnhost.tar"))
	if strings.Join(entrypoint, " ") != "/agnhost" || strings.Join(cmd, " ") != "pause" {
		t.Errorf("entrypoint %q, cmd %q; want [/agnhost] [pause]", entrypoint, cmd)
	}
	// which is the file the image's PATH finds for name, its links resolved inside root.
	which := func(name string) string {
		for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			p := d + "/" + name
			for range 10 {
				target, err := os.Readlink(filepath.Join(root, p))
				if err != nil {
					break
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(p), target)
				}
				p = target
			}
			if st, err := os.Stat(filepath.Join(root, p)); err == nil && st.Mode().IsRegular() {
				return p
			}
		}
		return ""
	}
	// sh is bash, not busybox: Debian's busybox-static runs its own applets before the programs on PATH, so
	// under its sh the tests' `nc -v` was busybox's nc, which has no -v; and bash passes on environment variables
	// whose names are not a shell's (a ConfigMap's keys as the tests set them), which busybox 1.35's ash drops.
	for name, want := range map[string]string{
		"sh": "/bin/bash", "seq": "/bin/busybox", "dig": "/usr/bin/dig", "curl": "/usr/bin/curl", "nc": "/bin/nc.openbsd", "getent": "/usr/bin/getent",
	} {
		if got := which(name); got != want {
			t.Errorf("%s on the image's PATH is %q, want %s", name, got, want)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "agnhost")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("/agnhost, the entrypoint, is not a file of the image: %v", err)
	}
	// What upstream's Dockerfile adds beside /agnhost: netexec's TLS certificate and key (the lifecycle hook tests
	// serve HTTPS with them), its upload directory, and the second name the entrypoint tests run it by.
	for _, p := range []string{"localhost.crt", "localhost.key", "uploads", "agnhost-2"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("/%s is not in the image, as upstream's agnhost has it: %v", p, err)
		}
	}
}
