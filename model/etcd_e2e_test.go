//go:build e2e

package model

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kubeup.dev/kubeup/internal/e2e"
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

// etcdCall posts a request to etcd's v3 JSON gateway of keys and decodes its answer.
func etcdCall(client string, method string, req, resp any) error {
	return etcdPost(client+"/v3/kv/"+method, req, resp)
}

// etcdPost posts a request to a URL of etcd's v3 JSON gateway and decodes its answer.
func etcdPost(url string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, r.Status)
	}
	return json.NewDecoder(r.Body).Decode(resp)
}

// waitHealthy waits until etcd's /health says true.
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
// the pod's command forms a new cluster on the data directory, takes a key, and started again as an existing
// member on the same data directory, serves the key back.
func TestEtcdPodRunsEtcd(t *testing.T) {
	e2e.RequireTools(t, "etcd")
	peer, client := freePort(t), freePort(t)
	pc := &ProtokubeConfig{ClusterName: "demo.example.com"}
	m := ProtokubeEtcdMember{Name: "a", DNSName: "localhost"}
	ec := ProtokubeEtcdCluster{Name: "main", PeerPort: peer, ClientPort: client, Members: []ProtokubeEtcdMember{m},
		Flags: []string{"--heartbeat-interval=100", "--election-timeout=1000"}}
	// A temporary directory stands for the volume's mount point; protokube creates the data directory on it.
	dataDir := EtcdDataDir(t.TempDir())
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "etcd.log")
	url := fmt.Sprintf("http://127.0.0.1:%d", client)
	key, value := base64.StdEncoding.EncodeToString([]byte("kubeup")), base64.StdEncoding.EncodeToString([]byte("kept"))

	args := func(existing bool) []string {
		p := EtcdPod(pc, ec, m, dataDir, existing)
		if got := p.Spec.Containers[0].Command; len(got) != 1 || got[0] != "etcd" {
			t.Fatalf("command %v, want etcd", got)
		}
		return p.Spec.Containers[0].Args
	}

	stop := runEtcdPod(t, args(false), logFile)
	waitHealthy(t, url, logFile)
	var put struct{}
	if err := etcdCall(url, "put", map[string]string{"key": key, "value": value}, &put); err != nil {
		t.Fatalf("writing a key: %v", err)
	}
	stop()
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err != nil {
		t.Fatalf("the new member left no data in %s: %v", dataDir, err)
	}

	runEtcdPod(t, args(true), logFile)
	waitHealthy(t, url, logFile)
	var got struct {
		KVs []struct{ Key, Value string }
	}
	if err := etcdCall(url, "range", map[string]string{"key": key}, &got); err != nil {
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
	if err := etcdPost(url+"/v3/cluster/member/list", struct{}{}, &members); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a http://localhost:%d http://localhost:%d", peer, client)
	if len(members.Members) != 1 || fmt.Sprintf("%s %s %s", members.Members[0].Name, strings.Join(members.Members[0].PeerURLs, ","),
		strings.Join(members.Members[0].ClientURLs, ",")) != want {
		t.Errorf("members %+v, want one: %s", members.Members, want)
	}
}
