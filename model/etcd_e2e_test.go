//go:build e2e

package model_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

// freePort returns a TCP port nothing listens on now, on every address.
func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// runEtcdPod runs the command of an etcd pod on the host, as kubelet would run its container on the host's
// network, until the test ends or stop is called; stop kills it by its PID and waits for it.
func runEtcdPod(t *testing.T, args []string, logFile string) (stop func()) {
	t.Helper()
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("etcd", args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log.Close()
	done := false
	stop = func() {
		if done {
			return
		}
		done = true
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// issueEtcdPKI issues the certificates EtcdPod's flags name, as kubeup's keystore does (model/pki.go), into a
// directory that stands for /srv/kubernetes/etcd, and returns it with an HTTPS client that presents a client
// certificate of the etcd clients CA, as kube-apiserver does.
func issueEtcdPKI(t *testing.T, e, m string) (dir string, client *http.Client) {
	t.Helper()
	now := time.Now()
	issue := func(r pkitasks.Request, signer *pkitasks.Issued) *pkitasks.Issued {
		is, err := pkitasks.Issue(r, signer, now)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	peersCA := issue(pkitasks.Request{CommonName: model.KeypairEtcdPeersCA, Usage: pkitasks.UsageCA, Lifetime: time.Hour}, nil)
	clientsCA := issue(pkitasks.Request{CommonName: model.KeypairEtcdClientsCA, Usage: pkitasks.UsageCA, Lifetime: time.Hour}, nil)
	peer := issue(pkitasks.Request{CommonName: "localhost", Usage: pkitasks.UsagePeer, DNSNames: []string{"localhost"}, Lifetime: time.Hour}, peersCA)
	server := issue(pkitasks.Request{CommonName: "localhost", Usage: pkitasks.UsagePeer, DNSNames: []string{"localhost"}, IPAddresses: []string{"127.0.0.1"}, Lifetime: time.Hour}, clientsCA)
	apiClient := issue(pkitasks.Request{CommonName: "kube-apiserver", Usage: pkitasks.UsageClient, Lifetime: time.Hour}, clientsCA)

	dir = t.TempDir()
	files := model.EtcdMemberPKI(e, m)
	for file, content := range map[string]string{
		model.EtcdPeersCAFile: peersCA.CertPEM, model.EtcdClientsCAFile: clientsCA.CertPEM,
		files.PeerCert: peer.CertPEM, files.PeerKey: peer.KeyPEM.Reveal(),
		files.ServerCert: server.CertPEM, files.ServerKey: server.KeyPEM.Reveal(),
	} {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(file)), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair([]byte(apiClient.CertPEM), []byte(apiClient.KeyPEM.Reveal()))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(clientsCA.Cert)
	client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}},
	}}
	return dir, client
}

// etcdCall posts a request to etcd's v3 JSON gateway of keys and decodes its answer.
func etcdCall(c *http.Client, url string, method string, req, resp any) error {
	return etcdPost(c, url+"/v3/kv/"+method, req, resp)
}

// etcdPost posts a request to a URL of etcd's v3 JSON gateway and decodes its answer.
func etcdPost(c *http.Client, url string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, r.Status)
	}
	return json.NewDecoder(r.Body).Decode(resp)
}

// waitHealthy waits until etcd's /health (on its metrics URL, plain http on 127.0.0.1) says true.
func waitHealthy(t *testing.T, client, logFile string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := http.Get(client + "/health")
		if err == nil {
			var h struct{ Health string }
			err = json.NewDecoder(r.Body).Decode(&h)
			r.Body.Close()
			if err == nil && h.Health == "true" {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("etcd at %s is not healthy after 30s (%v); its log:\n%s", client, err, log)
		}
	}
}

// TestEtcdPodRunsEtcd has Debian's etcd be the referee of EtcdPod's flags: a one-member cluster started with
// the pod's command forms a new cluster on the data directory over TLS, takes a key from a client with a
// certificate of the etcd clients CA (and refuses one without), and started again as an existing member on the
// same data directory, serves the key back. The certificates' directory the flags name (/srv/kubernetes/etcd)
// is a temporary one here: the flags are rewritten to it, as the pod's mount would place it.
func TestEtcdPodRunsEtcd(t *testing.T) {
	e2e.RequireTools(t, "etcd")
	peer, client, metrics := freePort(t), freePort(t), freePort(t)
	pc := &model.ProtokubeConfig{ClusterName: "demo.example.com"}
	m := model.ProtokubeEtcdMember{Name: "a", DNSName: "localhost"}
	pkiDir, https := issueEtcdPKI(t, "main", m.Name)
	ec := model.ProtokubeEtcdCluster{Name: "main", PeerPort: peer, ClientPort: client, MetricsPort: metrics, Members: []model.ProtokubeEtcdMember{m},
		Flags: []string{"--heartbeat-interval=100", "--election-timeout=1000"}}
	// A temporary directory stands for the volume's mount point; protokube creates the data directory on it.
	dataDir := model.EtcdDataDir(t.TempDir())
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "etcd.log")
	url := fmt.Sprintf("https://127.0.0.1:%d", client)
	health := fmt.Sprintf("http://127.0.0.1:%d", metrics)
	key, value := base64.StdEncoding.EncodeToString([]byte("kubeup")), base64.StdEncoding.EncodeToString([]byte("kept"))

	args := func(existing bool) []string {
		p := nodegraph.EtcdPod(pc, ec, m, dataDir, existing)
		if got := p.Spec.Containers[0].Command; len(got) != 1 || got[0] != "etcd" {
			t.Fatalf("command %v, want etcd", got)
		}
		args := slices.Clone(p.Spec.Containers[0].Args)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, model.EtcdPKI+"/", pkiDir+"/")
		}
		return args
	}

	stop := runEtcdPod(t, args(false), logFile)
	waitHealthy(t, health, logFile)
	var put struct{}
	if err := etcdCall(https, url, "put", map[string]string{"key": key, "value": value}, &put); err != nil {
		t.Fatalf("writing a key: %v", err)
	}
	// A client without a certificate of the etcd clients CA is refused.
	roots := https.Transport.(*http.Transport).TLSClientConfig.RootCAs
	anonymous := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	if err := etcdCall(anonymous, url, "put", map[string]string{"key": key, "value": "forged"}, &put); err == nil {
		t.Error("etcd took a key from a client without a certificate")
	}
	stop()
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err != nil {
		t.Fatalf("the new member left no data in %s: %v", dataDir, err)
	}

	runEtcdPod(t, args(true), logFile)
	waitHealthy(t, health, logFile)
	var got struct {
		KVs []struct{ Key, Value string }
	}
	if err := etcdCall(https, url, "range", map[string]string{"key": key}, &got); err != nil {
		t.Fatalf("reading the key back: %v", err)
	}
	if len(got.KVs) != 1 || got.KVs[0].Value != value {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("the key read back as %+v, want %q; etcd's log:\n%s", got.KVs, value, log)
	}
	// The member runs under its own name, reached by its DNS name.
	var members struct {
		Members []struct {
			Name       string
			PeerURLs   []string
			ClientURLs []string
		}
	}
	if err := etcdPost(https, url+"/v3/cluster/member/list", struct{}{}, &members); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a https://localhost:%d https://localhost:%d", peer, client)
	if len(members.Members) != 1 || fmt.Sprintf("%s %s %s", members.Members[0].Name, strings.Join(members.Members[0].PeerURLs, ","),
		strings.Join(members.Members[0].ClientURLs, ",")) != want {
		t.Errorf("members %+v, want one: %s", members.Members, want)
	}
}
