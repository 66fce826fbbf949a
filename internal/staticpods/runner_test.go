package staticpods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A binary is bound only as an absolute path, from an executable host file given as an absolute path; the
// script binds it after the pod's volumes and detaches its overlays' tmpfs after the pivot. (The e2e tests of
// internal/e2e run the script.)
func TestPodScriptBinaries(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "exe"), filepath.Join(dir, "plain")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		bin  bindMount
		err  string // "" for success
	}{
		{"ok", bindMount{Source: exe, Target: "/usr/local/bin/kube-apiserver"}, ""},
		{"relative command", bindMount{Source: exe, Target: "kube-apiserver"}, "want an absolute path"},
		{"root", bindMount{Source: exe, Target: "/"}, "want an absolute path"},
		{"relative file", bindMount{Source: "exe", Target: "/usr/local/bin/x"}, "not an absolute path"},
		{"missing file", bindMount{Source: filepath.Join(dir, "none"), Target: "/usr/local/bin/x"}, "no such file"},
		{"not executable", bindMount{Source: plain, Target: "/usr/local/bin/x"}, "not an executable file"},
		{"a directory", bindMount{Source: dir, Target: "/usr/local/bin/x"}, "not an executable file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			script, err := podScript("/run/pod.rootfs", []bindMount{{Source: dir, Target: "/data"}}, []bindMount{tt.bin})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one that says %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			volume := strings.Index(script, "mount --rbind '"+dir+"' './data'")
			binary := strings.Index(script, "\nbinary '"+exe+"' './usr/local/bin/kube-apiserver'\n")
			pivot := strings.Index(script, "pivot_root")
			detach := strings.Index(script, "umount -l /.binaries")
			if volume < 0 || binary < volume || pivot < binary || detach < pivot {
				t.Errorf("want the volume, the binary, the pivot and the detach of the overlays in that order:\n%s", script)
			}
		})
	}
	script, err := podScript("/run/pod.rootfs", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(script, "binaries") {
		t.Errorf("a pod without binaries gets their tmpfs:\n%s", script)
	}
}
