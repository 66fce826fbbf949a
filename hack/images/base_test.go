package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// baseTree writes a tree as a Debian package unpacks one: directories, programs, libraries, relative and absolute
// symbolic links, a setuid program and a directory only root may enter. It returns the entries its base layer
// must hold, in the layer's order: "NAME TYPE MODE [-> TARGET | SIZE]".
func baseTree(t *testing.T, root string) []string {
	t.Helper()
	dirs := map[string]os.FileMode{"etc": 0o755, "lib64": 0o755, "private": 0o700, "usr": 0o755, "usr/bin": 0o755, "usr/sbin": 0o755}
	files := map[string]struct {
		mode os.FileMode
		body string
	}{
		"etc/protocols":              {0o644, "tcp 6 TCP\n"},
		"private/key":                {0o600, "secret"},
		"usr/bin/newgrp":             {0o755 | os.ModeSetuid, "setuid"},
		"usr/sbin/xtables-nft-multi": {0o755, "\x7fELF pretend"},
	}
	links := map[string]string{
		"lib64/ld-linux-x86-64.so.2": "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"usr/sbin/iptables":          "iptables-nft",
		"usr/sbin/iptables-nft":      "xtables-nft-multi",
	}
	for _, d := range []string{"etc", "lib64", "private", "usr", "usr/bin", "usr/sbin"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, f := range files {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(f.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	// Modes are set last, and by chmod: the umask does not decide them.
	for d, mode := range dirs {
		if err := os.Chmod(filepath.Join(root, d), mode); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for d, mode := range dirs {
		want = append(want, fmt.Sprintf("%s/ dir %o", d, mode.Perm()))
	}
	for name, f := range files {
		m := int64(f.mode.Perm())
		if f.mode&os.ModeSetuid != 0 {
			m |= 0o4000
		}
		want = append(want, fmt.Sprintf("%s reg %o %d", name, m, len(f.body)))
	}
	for name, target := range links {
		want = append(want, fmt.Sprintf("%s symlink 777 -> %s", name, target))
	}
	slices.SortFunc(want, func(a, b string) int {
		return strings.Compare(strings.TrimSuffix(strings.Fields(a)[0], "/"), strings.TrimSuffix(strings.Fields(b)[0], "/"))
	})
	return want
}

// An image with a base has two layers: beneath the binaries' layer, the tree under the base directory with its
// directories, files (their bytes and permission bits, setuid kept) and symbolic links (their targets as they
// are), every entry owned by root at the epoch; and the same tree makes the same archive.
func TestBaseLayer(t *testing.T) {
	dir := t.TempDir()
	bin := buildPause(t, dir)
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	want := baseTree(t, root)
	const ref = "registry.k8s.io/kube-proxy:v1.34.2"
	var archives [2][]byte
	for i := range archives {
		out := filepath.Join(dir, fmt.Sprint("out", i))
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		sp, err := parseSpec(ref + "=" + bin + ":/usr/local/bin/kube-proxy")
		if err != nil {
			t.Fatal(err)
		}
		var bs bases
		if err := bs.Set(ref + "=" + root); err != nil {
			t.Fatal(err)
		}
		images, err := withBases(specs{sp}, bs)
		if err != nil {
			t.Fatal(err)
		}
		if err := run(out, images); err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(out, "kube-proxy.tar")
		if archives[i], err = os.ReadFile(archive); err != nil {
			t.Fatal(err)
		}
		img := readArchive(t, archive, ref)
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 2 {
			t.Fatalf("an image with a base: %d layers, want 2 (the base, then the binaries)", len(layers))
		}
		got, bodies := layerEntries(t, layers[0])
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the base layer holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if bodies["etc/protocols"] != "tcp 6 TCP\n" || bodies["usr/sbin/xtables-nft-multi"] != "\x7fELF pretend" {
			t.Errorf("the base layer's files hold %q", bodies)
		}
		if got, _ := layerEntries(t, layers[1]); !slices.Contains(got, "usr/local/bin/kube-proxy reg 755 "+fmt.Sprint(fileSize(t, bin))) {
			t.Errorf("the binaries' layer holds %q, want usr/local/bin/kube-proxy", got)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/kube-proxy" || !slices.Contains(cfg.Config.Env, imagePath) ||
			!strings.Contains(imagePath, ":/usr/sbin:") {
			t.Errorf("config: entrypoint %v, env %v; want the binary, and a PATH that finds /usr/sbin/iptables", cfg.Config.Entrypoint, cfg.Config.Env)
		}
		if len(cfg.History) != 2 {
			t.Errorf("config: %d history entries, want one a layer", len(cfg.History))
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two archives of the same base and binary differ")
	}
}

// layerEntries lists a layer's tar entries as baseTree does, checking each is owned by root at the epoch, and
// returns the regular files' bytes.
func layerEntries(t *testing.T, layer interface {
	Uncompressed() (io.ReadCloser, error)
}) ([]string, map[string]string) {
	t.Helper()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var got []string
	bodies := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: owner %d:%d, time %s; want root's, at the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			got = append(got, fmt.Sprintf("%s dir %o", h.Name, h.Mode))
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			bodies[h.Name] = string(b)
			got = append(got, fmt.Sprintf("%s reg %o %d", h.Name, h.Mode, h.Size))
		case tar.TypeSymlink:
			got = append(got, fmt.Sprintf("%s symlink %o -> %s", h.Name, h.Mode, h.Linkname))
		default:
			got = append(got, fmt.Sprintf("%s type %c", h.Name, h.Typeflag))
		}
	}
	return got, bodies
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// A base that cannot be an image's root is refused, naming what is wrong, and leaves nothing behind: it is not a
// directory, no -image names its image, its image has a base already, or it holds a named pipe.
func TestBaseRefused(t *testing.T) {
	dir := t.TempDir()
	bin := buildPause(t, dir)
	const ref = "registry.k8s.io/kube-proxy:v1.34.2"
	sp, err := parseSpec(ref + "=" + bin + ":/usr/local/bin/kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	withPipe := filepath.Join(dir, "withpipe")
	if err := os.MkdirAll(filepath.Join(withPipe, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(withPipe, "run", "initctl")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if err := os.Mkdir(good, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bases []string
		want  string
	}{
		{"missing", []string{ref + "=" + filepath.Join(dir, "nothing")}, filepath.Join(dir, "nothing")},
		{"a file", []string{ref + "=" + bin}, bin + " is not a directory"},
		{"no image", []string{"registry.k8s.io/kube-scheduler:v1.34.2=" + good}, "no -image names registry.k8s.io/kube-scheduler:v1.34.2"},
		{"two bases", []string{ref + "=" + good, ref + "=" + withPipe}, "has a base already"},
		{"a pipe", []string{ref + "=" + withPipe}, pipe + " is a named pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bs bases
			for _, b := range tc.bases {
				if err := bs.Set(b); err != nil {
					t.Fatal(err)
				}
			}
			out := t.TempDir()
			images, err := withBases(specs{sp}, bs)
			if err == nil {
				err = run(out, images)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if left, _ := os.ReadDir(out); len(left) != 0 {
				t.Errorf("a refused base left %v in the output directory", left)
			}
		})
	}
	for _, v := range []string{ref, ref + "=", "kube-proxy=" + good} {
		var bs bases
		if err := bs.Set(v); err == nil {
			t.Errorf("-base %q taken", v)
		}
	}
}
