package staticpods

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// One round against an API server (httptest, over TLS, reached at its address with the kubeconfig's server name):
// the Node registered with the labels and taints of the node's kubelet flags, its status with the address and
// --max-pods, a mirror pod posted for the pod that has none (Running while its process runs, Pending when it
// does not), and this node's mirror pod whose manifest is gone deleted.
func TestKubeletAPISync(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	bodies := map[string]map[string]any{}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		call := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			call += "?" + r.URL.RawQuery
		}
		calls = append(calls, call)
		if len(b) > 0 {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("%s: %v", call, err)
			}
			bodies[call] = m
		}
		mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/nodes":
			w.WriteHeader(http.StatusConflict) // registered in an earlier round
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
		case r.Method == http.MethodGet:
			io.WriteString(w, `{"items":[
				{"metadata":{"name":"etcd-main-node3","annotations":{"kubernetes.io/config.mirror":"x"}}},
				{"metadata":{"name":"etcd-events-node3","annotations":{"kubernetes.io/config.mirror":"x"}}},
				{"metadata":{"name":"some-daemon-pod"}}]}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	_, port, _ := net.SplitHostPort(u.Host)

	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "etc/default"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := "# Managed by kubeup (nodeup): kubelet's flags, from the cluster spec.\n" +
		`DAEMON_ARGS="--max-pods=80 --node-labels=kubeup.dev/instancegroup=control-plane-a-3,extra=yes ` +
		`--register-with-taints=node-role.kubernetes.io/control-plane=:NoSchedule --v=2"` + "\n"
	if err := os.WriteFile(filepath.Join(root, "etc/default/kubelet"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, "https://example.com:"+port, ts.Certificate())

	pods := []Pod{{Manifest: "etcd-main.manifest", PID: 42}, {Manifest: "kube-apiserver.manifest"}}
	k, err := newKubeletAPI(KubeletAPIConfig{NodeName: "node3", Address: "10.0.0.4", Root: root, Kubeconfig: kubeconfig,
		ServerAddresses: []string{"127.0.0.1:" + port}, Pods: func() []Pod { return pods }})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}

	want := []string{
		"POST /api/v1/nodes",
		"PATCH /api/v1/nodes/node3/status",
		"GET /api/v1/namespaces/kube-system/pods?fieldSelector=spec.nodeName%3Dnode3",
		"PATCH /api/v1/namespaces/kube-system/pods/etcd-main-node3/status",
		"POST /api/v1/namespaces/kube-system/pods",
		"PATCH /api/v1/namespaces/kube-system/pods/kube-apiserver-node3/status",
		"DELETE /api/v1/namespaces/kube-system/pods/etcd-events-node3?gracePeriodSeconds=0",
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	node := bodies["POST /api/v1/nodes"]
	if diff := cmp.Diff(map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": "node3", "labels": map[string]any{"kubeup.dev/instancegroup": "control-plane-a-3", "extra": "yes"}},
		"spec":     map[string]any{"taints": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "value": "", "effect": "NoSchedule"}}},
	}, node); diff != "" {
		t.Errorf("the Node registered (-want +got):\n%s", diff)
	}
	status := bodies["PATCH /api/v1/nodes/node3/status"]["status"].(map[string]any)
	if diff := cmp.Diff([]any{map[string]any{"type": "InternalIP", "address": "10.0.0.4"}, map[string]any{"type": "Hostname", "address": "node3"}},
		status["addresses"]); diff != "" {
		t.Errorf("the Node's addresses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"pods": "80"}, status["capacity"]); diff != "" {
		t.Errorf("the Node's capacity (-want +got):\n%s", diff)
	}
	if ready := status["conditions"].([]any)[0].(map[string]any); ready["type"] != "Ready" || ready["status"] != "True" {
		t.Errorf("the Node's condition: %v, want Ready True", ready)
	}
	mirror := bodies["POST /api/v1/namespaces/kube-system/pods"]["metadata"].(map[string]any)
	if mirror["name"] != "kube-apiserver-node3" || mirror["annotations"].(map[string]any)["kubernetes.io/config.mirror"] == nil {
		t.Errorf("the mirror pod posted: %v, want kube-apiserver-node3 with kubernetes.io/config.mirror", mirror)
	}
	for pod, phase := range map[string]string{"etcd-main-node3": "Running", "kube-apiserver-node3": "Pending"} {
		got := bodies["PATCH /api/v1/namespaces/kube-system/pods/"+pod+"/status"]["status"].(map[string]any)["phase"]
		if got != phase {
			t.Errorf("%s's phase: %v, want %s", pod, got, phase)
		}
	}
	for name, want := range map[string]bool{"etcd-main-node3": true, "kube-apiserver-node3": true, "etcd-events-node3": false, "some-daemon-pod": false} {
		if got := k.Mirrored(name); got != want {
			t.Errorf("Mirrored(%s) = %t, want %t", name, got, want)
		}
	}
}

func TestReadKubeletFlags(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		want       map[string]string
		err        string
	}{
		{"nodeup's", "# comment\nDAEMON_ARGS=\"--max-pods=110 --node-labels=a=b,c=d --v=2\"\n",
			map[string]string{"max-pods": "110", "node-labels": "a=b,c=d", "v": "2"}, ""},
		{"escaped, last wins", "DAEMON_ARGS=\"--x=\\$1 --x=2 --flag\"\n", map[string]string{"x": "2", "flag": ""}, ""},
		{"no DAEMON_ARGS", "# nothing\n", nil, "no DAEMON_ARGS line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubelet")
			if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readKubeletFlags(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig as kubeup export kubeconfig does: the server's CA and a client certificate,
// embedded.
func writeKubeconfig(t *testing.T, path, server string, ca *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(typ string, der []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: demo\n" +
		"contexts:\n- name: demo\n  context: {cluster: demo, user: demo-admin}\n" +
		"clusters:\n- name: demo\n  cluster:\n    server: " + server + "\n    certificate-authority-data: " + b64("CERTIFICATE", ca.Raw) + "\n" +
		"users:\n- name: demo-admin\n  user:\n    client-certificate-data: " + b64("CERTIFICATE", der) + "\n    client-key-data: " + b64("EC PRIVATE KEY", keyDER) + "\n"
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}
