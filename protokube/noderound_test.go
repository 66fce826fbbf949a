package protokube

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/kubetasks/kubetest"
	"kubeup.dev/kubeup/tasks/nodetasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// memRoutes is a routing table in memory, by destination; writes counts Replace and Delete.
type memRoutes struct {
	routes map[string]nodetasks.Route
	writes int
}

func (m *memRoutes) List(ctx context.Context) ([]nodetasks.Route, error) {
	return slices.Collect(maps.Values(m.routes)), nil
}

func (m *memRoutes) Replace(ctx context.Context, dst, gw string) error {
	if r, ok := m.routes[dst]; ok && r.Protocol != nodetasks.RouteProtocol {
		return fmt.Errorf("replaced a route not of kubeup's: %v", r)
	}
	m.writes++
	m.routes[dst] = nodetasks.Route{Dst: dst, Gateway: gw, Protocol: nodetasks.RouteProtocol}
	return nil
}

func (m *memRoutes) Delete(ctx context.Context, dst, gw string) error {
	m.writes++
	delete(m.routes, dst)
	return nil
}

// gateways is the table's routes of kubeup's, destination to gateway.
func (m *memRoutes) gateways() map[string]string {
	out := map[string]string{}
	for _, r := range m.routes {
		if r.Protocol == nodetasks.RouteProtocol {
			out[r.Dst] = r.Gateway
		}
	}
	return out
}

// TestNodeRound: protokube with a local worker's configuration runs the node round, and is not refused. While
// kubelet has no kubeconfig, or its kubeconfig names a client certificate not written yet, a round says so in the
// log, reads nothing and changes nothing. With kubelet's credentials (its kubeconfig, as kubelet writes it after its
// TLS bootstrap: kubelet-client-current.pem for both the certificate and the key), a round reads the Nodes and
// routes each other Node's range via its address, not this node's own (known by its certificate's name, although
// the address protokube took for its own is not the Node's); the next round changes nothing.
func TestNodeRound(t *testing.T) {
	conf := groupConf(t, "nodes")
	root := t.TempDir()
	api, _ := kubetest.New(t)
	node := func(name, ip, cidr string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{"podCIDR": cidr},
			"status": map[string]any{"addresses": []any{map[string]any{"type": "InternalIP", "address": ip}}}}
	}
	api.Objects["/api/v1/nodes"] = map[string]any{"kind": "NodeList", "items": []any{
		node("control-plane-a-1", "10.0.0.1", "10.244.0.0/24"), node("nodes-1", "10.0.0.2", "10.244.1.0/24"), node("nodes-2", "10.0.0.3", "10.244.2.0/24"),
	}}
	table := &memRoutes{routes: map[string]nodetasks.Route{"10.0.0.0/24": {Dst: "10.0.0.0/24", Protocol: 2}}}
	var logs bytes.Buffer
	round := func() {
		t.Helper()
		logs.Reset()
		err := Run(context.Background(), Options{Conf: conf, Root: root, Once: true, routeTable: table,
			Logger: slog.New(slog.NewTextHandler(&logs, nil)), Node: volumetasks.Holder{NodeID: "nodes-2", InternalIP: "10.0.0.99"}})
		if err != nil {
			t.Fatalf("Run = %v; logs:\n%s", err, logs.String())
		}
	}
	waits := func(what string) {
		t.Helper()
		gets := api.Gets
		round()
		if !strings.Contains(logs.String(), "waiting for kubelet's credentials") {
			t.Errorf("%s: the round does not say it waits for kubelet's credentials:\n%s", what, logs.String())
		}
		if table.writes != 0 || api.Gets != gets {
			t.Errorf("%s: the round wrote %d routes and read the API %d times, want none", what, table.writes, api.Gets-gets)
		}
	}
	waits("no kubeconfig")

	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	const current = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	kubeconfig := "apiVersion: v1\nkind: Config\ncurrent-context: default-context\n" +
		"clusters:\n- name: default-cluster\n  cluster:\n    server: " + api.URL + "\n    certificate-authority-data: " + b64(api.CAPEM) + "\n" +
		"contexts:\n- name: default-context\n  context:\n    cluster: default-cluster\n    namespace: default\n    user: default-auth\n" +
		"users:\n- name: default-auth\n  user:\n    client-certificate: " + current + "\n    client-key: " + current + "\n"
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("/var/lib/kubelet/kubeconfig", kubeconfig)
	waits("a kubeconfig whose certificate is not written yet")

	certPEM, keyPEM := kubetest.SubjectCert(t, pkix.Name{CommonName: "system:node:nodes-2", Organization: []string{"system:nodes"}})
	write(current, string(certPEM)+string(keyPEM))
	round()
	want := map[string]string{"10.244.0.0/24": "10.0.0.1", "10.244.1.0/24": "10.0.0.2"}
	if got := table.gateways(); !maps.Equal(got, want) {
		t.Fatalf("routes = %v, want %v; logs:\n%s", got, want, logs.String())
	}
	if r := table.routes["10.0.0.0/24"]; r.Protocol != 2 {
		t.Errorf("the node's own link route was touched: %v", r)
	}
	writes := table.writes
	round()
	if table.writes != writes || !strings.Contains(logs.String(), "changes=0") {
		t.Errorf("the second round wrote %d routes, want none; logs:\n%s", table.writes-writes, logs.String())
	}
}

// TestCheckOwnedNodeRound: the ownership check accepts the node round's graph (its pod routes alone), and still
// refuses, in that graph, a task that writes outside what kubeup owns.
func TestCheckOwnedNodeRound(t *testing.T) {
	g := engine.NewGraph[*Round]()
	engine.Add(g, &nodetasks.PodRoutes[*Round]{Name: "pod-ranges", Routes: map[string]string{"10.244.1.0/24": "10.0.0.2"}})
	if err := checkOwned("node.conf", g, nil); err != nil {
		t.Fatalf("checkOwned refuses the node round's graph: %v", err)
	}
	engine.AddIn(g, (*Round).Node, &nodetasks.File{Path: "/etc/passwd", Contents: new(string)})
	if err := checkOwned("node.conf", g, nil); err == nil || !strings.Contains(err.Error(), "/etc/passwd is not in a directory kubeup owns") {
		t.Errorf("checkOwned = %v, want a refusal of /etc/passwd", err)
	}
}

// TestKubeletClient: kubelet's kubeconfig with its credentials inline makes a client; one whose current context
// names no cluster, or whose user has no key, is an error naming the file and the fix, not a wait; one that names
// a CA file not written yet is a wait (errNoKubeletCredentials).
func TestKubeletClient(t *testing.T) {
	nc := &model.NodeConfig{Cluster: &model.Cluster{Spec: model.ClusterSpec{Kubelet: &model.KubeletConfig{Kubeconfig: "/var/lib/kubelet/kubeconfig"}}}}
	api, _ := kubetest.New(t)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	for _, tt := range []struct {
		name, kubeconfig, err string
		wait                  bool
	}{
		{"inline", "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: " + api.URL +
			", certificate-authority-data: " + b64(api.CAPEM) + "}}]\nusers: [{name: u, user: {client-certificate-data: " + b64(api.CertPEM) +
			", client-key-data: " + b64(api.KeyPEM) + "}}]\n", "", false},
		{"no context", "current-context: other\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n", `no context "other"`, false},
		{"no key", "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: " + api.URL +
			", certificate-authority-data: " + b64(api.CAPEM) + "}}]\nusers: [{name: u, user: {client-certificate-data: " + b64(api.CertPEM) + "}}]\n", "no client-key", false},
		{"CA file not there yet", "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: " + api.URL +
			", certificate-authority: pki/ca.crt}}]\nusers: [{name: u, user: {client-certificate-data: " + b64(api.CertPEM) + "}}]\n", "/var/lib/kubelet/pki/ca.crt", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, "var/lib/kubelet/kubeconfig")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tt.kubeconfig), 0o600); err != nil {
				t.Fatal(err)
			}
			c, _, err := kubeletClient(root, nc)
			switch {
			case tt.err == "":
				if err != nil {
					t.Fatal(err)
				}
				var list map[string]any
				if err := c.Get(context.Background(), "/version", &list); err != nil {
					t.Errorf("the client does not reach the API: %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, errNoKubeletCredentials) != tt.wait:
				t.Errorf("kubeletClient = %v, want an error saying %q (a wait: %t)", err, tt.err, tt.wait)
			case !tt.wait && !strings.Contains(err.Error(), "kubelet's kubeconfig /var/lib/kubelet/kubeconfig"):
				t.Errorf("kubeletClient = %v, want it to name the file", err)
			}
		})
	}
}
