package e2e

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// AssetsDir writes into a new directory the files a node installs, from this machine's builds, named and packed
// as upstream publishes them, for `kubeup assets mirror --from` (no release server is reachable here): kubelet,
// protokube (the file given), runc.amd64, containerd's, the CNI plugins' and crictl's release archives, and the
// images' archives. It returns the directory.
func AssetsDir(t testing.TB, protokube string) string {
	t.Helper()
	bin := RuntimeBin(t)
	dir := t.TempDir()
	versions := map[string]string{}
	b, err := os.ReadFile(filepath.Join(bin, "VERSIONS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			versions[f[0]] = strings.TrimPrefix(f[1], "v")
		}
	}
	copyTo := func(from, name string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(KubeBinary(t, "kubelet"), "kubelet")
	copyTo(protokube, "protokube")
	copyTo(filepath.Join(bin, "runc"), "runc.amd64")
	members := map[string]string{}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
		members["bin/"+b] = filepath.Join(bin, b)
	}
	writeTarGz(t, filepath.Join(dir, "containerd-"+versions["containerd"]+"-linux-amd64.tar.gz"), members)
	members = map[string]string{}
	for _, p := range CNIPlugins {
		members["./"+p] = filepath.Join(bin, "cni", p)
	}
	writeTarGz(t, filepath.Join(dir, "cni-plugins-linux-amd64-v"+versions["cni-plugins"]+".tgz"), members)
	writeTarGz(t, filepath.Join(dir, "crictl-v"+versions["crictl"]+"-linux-amd64.tar.gz"), map[string]string{"crictl": filepath.Join(bin, "crictl")})
	for _, img := range Images(t) {
		copyTo(img.Archive, filepath.Base(img.Archive))
	}
	return dir
}

// writeTarGz writes a gzip'd tar of files (member name -> file of this machine), each a regular file 0755.
func writeTarGz(t testing.TB, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, from := range files {
		src, err := os.Open(from)
		if err != nil {
			t.Fatal(err)
		}
		st, err := src.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: st.Size(), Typeflag: tar.TypeReg, ModTime: st.ModTime()}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
	}
	for _, c := range []io.Closer{tw, gz} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// WithMachines returns spec (as WithRFC2136 takes it) with what kubelet and containerd need on BootMachine's
// machines on this host: the cgroupfs driver on a cgroup v1 host (the machines' systemd has no controller but its
// own), and containerd's restrictOOMScoreAdj where this machine lacks CAP_SYS_RESOURCE. kube-proxy leaves the
// conntrack table's size alone (conntrackMaxPerCore 0): the machines share the host's kernel, whose
// nf_conntrack_max is global, and nothing would put it back.
func WithMachines(t testing.TB, spec string) string {
	t.Helper()
	const local = "  cloudProvider: local\n"
	if !strings.Contains(spec, local) {
		t.Fatalf("not a spec of the local cloud:\n%s", spec)
	}
	driver := MachineCgroupDriver(t)
	restrict := "false"
	if !hasCapSysResource() {
		restrict = "true"
	}
	return strings.Replace(spec, local, local+"  kubelet:\n    cgroupDriver: "+driver+"\n  containerd:\n    restrictOOMScoreAdj: "+restrict+
		"\n  kubeProxy:\n    conntrackMaxPerCore: 0\n", 1)
}

// hasCapSysResource reports whether this process's bounding set holds CAP_SYS_RESOURCE (24).
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps>>24&1 == 1
		}
	}
	return false
}
