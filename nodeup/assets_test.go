package nodeup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"kubeup.dev/kubeup/model"
)

// tarGz returns a gzip'd tar of regular files, in the order given (name, contents, name, contents...).
func tarGz(t testing.TB, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for i := 0; i < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o755, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// assetServer serves files by path and counts the requests.
type assetServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	gets  int
}

func newAssetServer(t testing.TB, files map[string][]byte) *assetServer {
	s := &assetServer{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.gets++
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *assetServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

// workerAssets are a worker's files, as upstream lays them out, served by path.
func workerAssets(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"/kubelet":    []byte("#!/bin/sh\necho kubelet\n"),
		"/runc.amd64": []byte("#!/bin/sh\necho runc\n"),
		"/containerd.tar.gz": tarGz(t, "bin/containerd", "containerd", "bin/containerd-shim-runc-v2", "shim", "bin/ctr", "ctr",
			"bin/containerd-stress", "not installed"),
		"/cni.tgz": tarGz(t, "./bridge", "bridge", "./host-local", "host-local", "./loopback", "loopback", "./portmap", "portmap",
			"./vlan", "not installed"),
		"/crictl.tar.gz":  tarGz(t, "crictl", "crictl"),
		"/pause.tar":      []byte("pause image archive"),
		"/kube-proxy.tar": []byte("kube-proxy image archive"),
	}
}

// withAssets sets every asset of a worker to the server's file, with its sha256, except kubeletSHA when it is set.
func withAssets(base string, files map[string][]byte, kubeletSHA string) func(*model.Cluster) {
	return func(c *model.Cluster) {
		a := c.Spec.Assets
		set := func(f *model.AssetSpec, p string) {
			f.URL, f.SHA256 = base+p, sha256Of(files[p])
		}
		set(a.Kubelet, "/kubelet")
		set(a.Runc, "/runc.amd64")
		set(a.Containerd, "/containerd.tar.gz")
		set(a.CNIPlugins, "/cni.tgz")
		set(a.Crictl, "/crictl.tar.gz")
		for name, p := range map[string]string{"pause": "/pause.tar", "kube-proxy": "/kube-proxy.tar"} {
			a.Images[name].URL, a.Images[name].SHA256 = base+p, sha256Of(files[p])
		}
		if kubeletSHA != "" {
			a.Kubelet.SHA256 = kubeletSHA
		}
	}
}

// TestAssetWrongSHA256 is the acceptance test of the assets: on a fresh node root, a configuration that names
// kubelet with a wrong sha256 installs nothing of it (no file at its path, no temporary file beside it) and
// fails naming the asset, the URL and both hashes; the run with the right sha256 installs every asset; the next
// run downloads nothing and changes nothing, and a dry run after it shows no change.
func TestAssetWrongSHA256(t *testing.T) {
	files := workerAssets(t)
	srv := newAssetServer(t, files)
	right := sha256Of(files["/kubelet"])
	wrong := sha256Of([]byte("another kubelet"))
	dir := t.TempDir()
	root := t.TempDir()

	conf := writeConf(t, dir, "nodes", nodeConfigWith(t, "nodes", withAssets(srv.URL, files, wrong)))
	r := run(t, Options{Conf: conf, Root: root})
	if r.runErr == nil {
		t.Fatalf("a kubelet whose sha256 is wrong: nodeup succeeded:\n%s", r.out)
	}
	msg := r.runErr.Error()
	t.Logf("the run failed as it should: %s", msg)
	for _, want := range []string{"Asset//usr/local/bin/kubelet", srv.URL + "/kubelet", "got " + right, "want " + wrong} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not name %q:\n%s", want, msg)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "usr/local/bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "kubelet") {
			t.Errorf("after the failed run, /usr/local/bin holds %s: nothing of kubelet may be installed", e.Name())
		}
	}

	conf = writeConf(t, dir, "nodes", nodeConfigWith(t, "nodes", withAssets(srv.URL, files, "")))
	r = run(t, Options{Conf: conf, Root: root})
	if r.runErr != nil {
		t.Fatalf("the run with the right sha256: %v\n%s", r.runErr, r.err)
	}
	for p, want := range map[string]string{
		"usr/local/bin/kubelet":                 string(files["/kubelet"]),
		"usr/local/sbin/runc":                   string(files["/runc.amd64"]),
		"usr/local/bin/containerd":              "containerd",
		"usr/local/bin/containerd-shim-runc-v2": "shim",
		"usr/local/bin/ctr":                     "ctr",
		"usr/local/bin/crictl":                  "crictl",
		"opt/cni/bin/bridge":                    "bridge",
		"opt/cni/bin/portmap":                   "portmap",
		"var/lib/kubeup/images/pause.tar":       string(files["/pause.tar"]),
		"var/lib/kubeup/images/kube-proxy.tar":  string(files["/kube-proxy.tar"]),
	} {
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || string(got) != want {
			t.Errorf("/%s: %q, %v; want %q", p, got, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(root, "usr/local/bin/kubelet")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("/usr/local/bin/kubelet: %v, %v; want mode 0755", st, err)
	}
	for _, p := range []string{"usr/local/bin/containerd-stress", "opt/cni/bin/vlan", "var/lib/kubeup/assets/containerd.tar.gz"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("/%s exists: only the named members are installed, and the archive is removed", p)
		}
	}
	applied := treeHash(t, root)
	gets := srv.requests()

	r = run(t, Options{Conf: conf, Root: root})
	if r.runErr != nil || r.out != "No changes were needed\n" {
		t.Errorf("third run: err %v, printed:\n%s\nwant: No changes were needed", r.runErr, r.out)
	}
	r = run(t, Options{Conf: conf, Root: root, DryRun: true})
	if r.runErr != nil || r.out != "No changes need to be applied\n" {
		t.Errorf("dry run after apply: err %v, printed:\n%s\nwant: No changes need to be applied", r.runErr, r.out)
	}
	if n := srv.requests(); n != gets {
		t.Errorf("the third run and the dry run downloaded %d files: want none", n-gets)
	}
	if got := treeHash(t, root); got != applied {
		t.Errorf("the third run changed the tree:\nbefore:\n%s\nafter:\n%s", applied, got)
	}

	// A member changed on the node is seen, and unpacked again.
	if err := os.WriteFile(filepath.Join(root, "usr/local/bin/ctr"), []byte("tampered"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(t, Options{Conf: conf, Root: root, DryRun: true})
	if r.runErr != nil || !strings.Contains(r.out, "Archive/containerd") {
		t.Errorf("dry run after ctr changed: err %v, printed:\n%s\nwant a change of Archive/containerd", r.runErr, r.out)
	}
	if r = run(t, Options{Conf: conf, Root: root}); r.runErr != nil {
		t.Fatal(r.runErr)
	}
	if got := treeHash(t, root); got != applied {
		t.Errorf("after unpacking again, the tree differs:\nbefore:\n%s\nafter:\n%s", applied, got)
	}
}

// TestAssetFromStore installs an asset whose URL is a file:// state store's, and names the fix for one that is
// missing there.
func TestAssetFromStore(t *testing.T) {
	store := t.TempDir()
	kubelet := []byte("kubelet from the store")
	p := filepath.Join(store, testCluster, "assets/kubernetes/v1.34.2/bin/linux/amd64/kubelet")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, kubelet, 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	conf := writeConf(t, t.TempDir(), "nodes", nodeConfigWith(t, "nodes", func(c *model.Cluster) {
		c.Spec.Assets.Kubelet.URL, c.Spec.Assets.Kubelet.SHA256 = "file://"+p, sha256Of(kubelet)
	}))
	if r := run(t, Options{Conf: conf, Root: root}); r.runErr != nil {
		t.Fatalf("%v\n%s", r.runErr, r.err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "usr/local/bin/kubelet")); err != nil || !bytes.Equal(got, kubelet) {
		t.Errorf("/usr/local/bin/kubelet: %q, %v", got, err)
	}

	conf = writeConf(t, t.TempDir(), "nodes", nodeConfigWith(t, "nodes", func(c *model.Cluster) {
		c.Spec.Assets.Kubelet.URL, c.Spec.Assets.Kubelet.SHA256 = "file://"+p+".missing", sha256Of(kubelet)
	}))
	r := run(t, Options{Conf: conf, Root: t.TempDir()})
	if r.runErr == nil || !strings.Contains(r.runErr.Error(), "kubeup assets mirror") {
		t.Errorf("an asset missing from the store: %v; want an error naming `kubeup assets mirror`", r.runErr)
	}
}

// TestKilledMidDownload kills nodeup (the binary) with SIGKILL while it is in the middle of downloading kubelet and
// containerd's archive (the server has sent half of each and waits): nothing is at kubelet's path, nothing of the
// archive is installed or recorded, only temporary files. The next run downloads them whole and leaves no
// temporary file.
func TestKilledMidDownload(t *testing.T) {
	bin, err := nodeupBinary() // shared with TestKilledNodeup; TestMain removes it
	if err != nil {
		t.Fatal(err)
	}
	files := workerAssets(t)
	var mu sync.Mutex
	block := true
	reached := map[string]bool{}
	cond := sync.NewCond(&mu)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		blocking := block && (r.URL.Path == "/kubelet" || r.URL.Path == "/containerd.tar.gz")
		mu.Unlock()
		if !blocking {
			w.Write(data)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		mu.Lock()
		reached[r.URL.Path] = true
		cond.Broadcast()
		mu.Unlock()
		<-r.Context().Done() // until nodeup is killed
	}))
	defer srv.Close()

	k := newKilledApply(t, bin, nodeConfigWith(t, "nodes", withAssets(srv.URL, files, "")))
	cmd := k.command()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for !reached["/kubelet"] || !reached["/containerd.tar.gz"] {
		cond.Wait()
	}
	block = false
	mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	for p := range readTree(t, k.root) {
		switch {
		case tempFile.MatchString(filepath.Base(p)):
		case p == "usr/local/bin/kubelet", p == "usr/local/bin/containerd", p == "usr/local/bin/containerd-shim-runc-v2", p == "usr/local/bin/ctr",
			strings.HasPrefix(p, "var/lib/kubeup/assets/containerd"):
			t.Errorf("after a kill mid-download: %s is there\n%s", p, &out)
		}
	}

	k.mustRun(t)
	for p, e := range readTree(t, k.root) {
		if tempFile.MatchString(filepath.Base(p)) {
			t.Errorf("after the run to the end: temporary file %s (%v) is left", p, e)
		}
	}
	for p, want := range map[string]string{"usr/local/bin/kubelet": string(files["/kubelet"]), "usr/local/bin/containerd": "containerd"} {
		if got, err := os.ReadFile(filepath.Join(k.root, p)); err != nil || string(got) != want {
			t.Errorf("after the run to the end: /%s = %q, %v", p, got, err)
		}
	}
}
