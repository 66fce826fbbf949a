package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildDeb builds a Debian package named pkg holding files (path: body; a body "-> TARGET" is a symbolic link)
// into dir, and returns its file name.
func buildDeb(t *testing.T, dir, pkg string, files map[string]string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), pkg)
	if err := os.MkdirAll(filepath.Join(src, "DEBIAN"), 0o755); err != nil {
		t.Fatal(err)
	}
	control := fmt.Sprintf("Package: %s\nVersion: 1.0-1\nArchitecture: all\nMaintainer: kubeup <test@kubeup.dev>\nDescription: a test package\n", pkg)
	if err := os.WriteFile(filepath.Join(src, "DEBIAN", "control"), []byte(control), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(body, "-> "); ok {
			err = os.Symlink(target, p)
		} else {
			err = os.WriteFile(p, []byte(body), 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(dir, pkg+"_1.0-1_all.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-b", src, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -b: %v\n%s", err, out)
	}
	return deb
}

// writeSums writes dir/SHA256SUMS of the .debs in dir, as debs.sh fetch does.
func writeSums(t *testing.T, dir string) {
	t.Helper()
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	var sums strings.Builder
	for _, deb := range debs {
		b, err := os.ReadFile(deb)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(b), filepath.Base(deb))
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// requireDpkg skips a test of debs.sh on a machine that is not Debian, loudly; under CI=true it fails instead.
func requireDpkg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no dpkg-deb: debs.sh runs on Debian only, and CI=true")
		}
		t.Skip("no dpkg-deb: debs.sh runs on Debian only")
	}
}

func debsSh(args ...string) (string, error) {
	out, err := exec.Command("./debs.sh", args...).CombinedOutput()
	return string(out), err
}

// iptablesFiles is what the iptables package ships at the paths the alternatives link to (and its
// documentation).
func iptablesFiles() map[string]string {
	files := map[string]string{
		"usr/sbin/xtables-nft-multi":         "nft",
		"usr/sbin/xtables-legacy-multi":      "legacy",
		"usr/share/doc/iptables/copyright":   "GPL",
		"usr/share/man/man8/iptables.8.gz":   "man",
		"usr/share/lintian/overrides/ipt":    "lintian",
		"usr/lib/x86_64-linux-gnu/xtables/x": "extension",
	}
	for _, t := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			files["usr/sbin/"+t+"-nft"+suffix] = "-> xtables-nft-multi"
			files["usr/sbin/"+t+"-legacy"+suffix] = "-> xtables-legacy-multi"
		}
	}
	return files
}

// debs.sh root unpacks every package (nothing installed), drops documentation and iconv modules, and links
// iptables, ip6tables and their -save and -restore to the nf_tables backend, as Debian 12's alternatives do.
func TestDebsRoot(t *testing.T) {
	requireDpkg(t)
	debs, root := t.TempDir(), filepath.Join(t.TempDir(), "root")
	buildDeb(t, debs, "iptables", iptablesFiles())
	buildDeb(t, debs, "libc6", map[string]string{
		"lib/x86_64-linux-gnu/libc.so.6":                 "libc",
		"lib64/ld-linux-x86-64.so.2":                     "-> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
		"usr/lib/x86_64-linux-gnu/gconv/UTF-16.so":       "iconv",
		"usr/share/doc/libc6/copyright":                  "LGPL",
		"usr/lib/x86_64-linux-gnu/gconv/gconv-modules.d": "iconv",
	})
	writeSums(t, debs)
	if out, err := debsSh("root", debs, root); err != nil {
		t.Fatalf("debs.sh root: %v\n%s", err, out)
	}
	for _, tc := range []struct{ link, target string }{
		{"iptables", "iptables-nft"}, {"iptables-save", "iptables-nft-save"}, {"iptables-restore", "iptables-nft-restore"},
		{"ip6tables", "ip6tables-nft"}, {"ip6tables-save", "ip6tables-nft-save"}, {"ip6tables-restore", "ip6tables-nft-restore"},
		{"iptables-legacy", "xtables-legacy-multi"},
	} {
		if got, err := os.Readlink(filepath.Join(root, "usr/sbin", tc.link)); err != nil || got != tc.target {
			t.Errorf("/usr/sbin/%s -> %q, %v; want -> %s", tc.link, got, err, tc.target)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "usr/sbin/iptables-restore")); err != nil || string(b) != "nft" {
		t.Errorf("/usr/sbin/iptables-restore runs %q, %v; want xtables-nft-multi", b, err)
	}
	for _, gone := range []string{"usr/share/doc", "usr/share/man", "usr/share/lintian", "usr/lib/x86_64-linux-gnu/gconv"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("/%s is in the base: %v", gone, err)
		}
	}
	for _, kept := range []string{"lib/x86_64-linux-gnu/libc.so.6", "lib64/ld-linux-x86-64.so.2", "usr/lib/x86_64-linux-gnu/xtables/x"} {
		if _, err := os.Lstat(filepath.Join(root, kept)); err != nil {
			t.Errorf("/%s is not in the base: %v", kept, err)
		}
	}
}

// debs.sh refuses, naming the problem: a package that is not the one fetched, a set with no nf_tables variant of a
// program kube-proxy runs, and a list line that is not a pin (before asking any mirror).
func TestDebsRefused(t *testing.T) {
	requireDpkg(t)
	t.Run("changed package", func(t *testing.T) {
		debs := t.TempDir()
		deb := buildDeb(t, debs, "iptables", iptablesFiles())
		writeSums(t, debs)
		buildDeb(t, debs, "iptables", map[string]string{"usr/sbin/iptables-nft": "something else"})
		out, err := debsSh("root", debs, filepath.Join(t.TempDir(), "root"))
		if err == nil || !strings.Contains(out, filepath.Base(deb)) || !strings.Contains(out, "differs from its SHA256SUMS") {
			t.Errorf("debs.sh root of a changed package: %v\n%s", err, out)
		}
	})
	t.Run("no nft variant", func(t *testing.T) {
		debs := t.TempDir()
		files := iptablesFiles()
		delete(files, "usr/sbin/ip6tables-nft-restore")
		buildDeb(t, debs, "iptables", files)
		writeSums(t, debs)
		out, err := debsSh("root", debs, filepath.Join(t.TempDir(), "root"))
		if err == nil || !strings.Contains(out, "no package holds /usr/sbin/ip6tables-nft-restore") {
			t.Errorf("debs.sh root with no ip6tables-nft-restore: %v\n%s", err, out)
		}
	})
	t.Run("malformed list", func(t *testing.T) {
		list := filepath.Join(t.TempDir(), "debs")
		if err := os.WriteFile(list, []byte("# pins\n\niptables 1.8.9-2 amd64\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "cache")
		out, err := debsSh("fetch", list, dir)
		if err == nil || !strings.Contains(out, list+":3: want PACKAGE VERSION ARCH SHA256") {
			t.Errorf("debs.sh fetch of a malformed list: %v\n%s", err, out)
		}
		for _, left := range []string{dir, dir + ".tmp"} {
			if _, err := os.Stat(left); !os.IsNotExist(err) {
				t.Errorf("a refused list left %s: %v", left, err)
			}
		}
	})
}

// debs.sh unpack makes the links of busybox's applets that no package holds, relative (bin/sh -> busybox,
// usr/bin/seq -> ../../bin/busybox), leaves a program a package ships as it is, and makes no iptables links.
func TestDebsUnpackBusybox(t *testing.T) {
	requireDpkg(t)
	debs, root := t.TempDir(), filepath.Join(t.TempDir(), "root")
	// A busybox that lists its applets as `busybox --list-full` does.
	buildDeb(t, debs, "busybox-static", map[string]string{
		"bin/busybox": "#!/bin/sh\n[ \"$1\" = --list-full ] || exit 1\nprintf '%s\\n' bin/sh usr/bin/seq usr/bin/dig\n",
	})
	buildDeb(t, debs, "bind9-dnsutils", map[string]string{"usr/bin/dig": "dig", "usr/share/doc/bind9-dnsutils/copyright": "MPL"})
	writeSums(t, debs)
	if out, err := debsSh("unpack", debs, root); err != nil {
		t.Fatalf("debs.sh unpack: %v\n%s", err, out)
	}
	for _, tc := range []struct{ link, target string }{{"bin/sh", "busybox"}, {"usr/bin/seq", "../../bin/busybox"}} {
		if got, err := os.Readlink(filepath.Join(root, tc.link)); err != nil || got != tc.target {
			t.Errorf("/%s -> %q, %v; want -> %s", tc.link, got, err, tc.target)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "usr/bin/dig")); err != nil || string(b) != "dig" {
		t.Errorf("/usr/bin/dig is %q, %v; want the package's", b, err)
	}
	for _, gone := range []string{"usr/share/doc", "usr/sbin/iptables"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("/%s is in the root: %v", gone, err)
		}
	}
}
