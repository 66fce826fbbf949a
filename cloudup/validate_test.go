package cloudup

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/nodeup/nodegraph"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// staticDNS resolves the names it holds.
type staticDNS map[string][]string

func (d staticDNS) LookupHost(ctx context.Context, host string) ([]string, error) {
	if a, ok := d[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// validateWorld is what one validation test case sees: the API's nodes and kube-system pods, the members etcd
// answers unhealthy for, and the DNS.
type validateWorld struct {
	nodes, pods []map[string]any
	etcdDown    map[string]bool // by member DNS name
	dns         staticDNS
}

// healthyWorld is a cluster of three Ready control-plane nodes at 127.0.0.1-3, each running the control plane's
// static pods and the members a-N of main and events, with every name pointing where it should.
func healthyWorld(c *model.Cluster) *validateWorld {
	w := &validateWorld{etcdDown: map[string]bool{}, dns: staticDNS{}}
	var all []string
	for i := 1; i <= 3; i++ {
		node, addr := "node"+strconv.Itoa(i), "127.0.0."+strconv.Itoa(i)
		all = append(all, addr)
		w.nodes = append(w.nodes, map[string]any{
			"metadata": map[string]any{"name": node, "labels": map[string]string{NodeLabelInstanceGroup: "control-plane-a-" + strconv.Itoa(i)}},
			"status": map[string]any{"conditions": []map[string]string{{"type": "Ready", "status": "True"}},
				"addresses": []map[string]string{{"type": "InternalIP", "address": addr}}},
		})
		for _, pod := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd-main", "etcd-events"} {
			w.pods = append(w.pods, map[string]any{
				"metadata": map[string]any{"name": pod + "-" + node, "annotations": map[string]string{"kubernetes.io/config.mirror": "x"}},
				"spec":     map[string]any{"nodeName": node},
				"status":   map[string]any{"phase": "Running", "conditions": []map[string]string{{"type": "Ready", "status": "True"}}},
			})
		}
		for _, ec := range []string{"main", "events"} {
			w.dns[model.EtcdMemberDNSName(c.Metadata.Name, ec, "a-"+strconv.Itoa(i))] = []string{addr}
		}
	}
	w.dns[c.Spec.API.PublicName] = all
	w.dns[c.Spec.API.InternalName] = all
	return w
}

// serve starts the world's API and etcd (one TLS server on every address, port of the API and of every etcd
// cluster's members) and returns a validator for c that reaches them.
func (w *validateWorld) serve(t *testing.T, c *model.Cluster, igs []*model.InstanceGroup) *validator {
	t.Helper()
	mux := http.NewServeMux()
	list := func(items []map[string]any) http.HandlerFunc {
		return func(rw http.ResponseWriter, r *http.Request) {
			json.NewEncoder(rw).Encode(map[string]any{"items": items})
		}
	}
	mux.HandleFunc("/api/v1/nodes", list(w.nodes))
	mux.HandleFunc("/api/v1/namespaces/kube-system/pods", list(w.pods))
	mux.HandleFunc("/health", func(rw http.ResponseWriter, r *http.Request) {
		if w.etcdDown[r.TLS.ServerName] {
			rw.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(rw, `{"health":"false","reason":"RAFT NO LEADER"}`)
			return
		}
		fmt.Fprint(rw, `{"health":"true","reason":""}`)
	})
	srv := httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", "0.0.0.0:0") // every 127.0.0.x
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	for k := range c.Spec.EtcdClusters {
		c.Spec.EtcdClusters[k].ClientPort = int32(p)
	}
	insecure := &tls.Config{InsecureSkipVerify: true} // the fake's certificate: what is tested is what validation reads
	api := &apiClient{server: "https://" + c.Spec.API.PublicName, host: c.Spec.API.PublicName, port: port, resolver: w.dns,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}}}
	etcd := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure, DialContext: dialVia(w.dns)}}
	return &validator{c: c, igs: igs, api: api, etcd: etcd, dns: w.dns}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *validateWorld, c *model.Cluster)
		want   []string // the failures, "Kind Name: a part of the message"
	}{
		{name: "healthy", change: func(*validateWorld, *model.Cluster) {}},
		{
			name: "a node not Ready",
			change: func(w *validateWorld, c *model.Cluster) {
				w.nodes[2]["status"].(map[string]any)["conditions"] = []map[string]string{{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}}
			},
			want: []string{
				"Node node3: not Ready: KubeletNotReady",
				"InstanceGroup control-plane-a-3: 0 nodes Ready, want at least 1 (its minSize)",
				"DNSRecord api.demo.example.com: points at 127.0.0.3, which is not the address of a Ready control-plane node",
				"DNSRecord api.internal.demo.example.com: points at 127.0.0.3,",
				"DNSRecord a-3.etcd-main.internal.demo.example.com: points at 127.0.0.3,",
				"DNSRecord a-3.etcd-events.internal.demo.example.com: points at 127.0.0.3,",
			},
		},
		{
			name: "an etcd member unhealthy, and its pod gone",
			change: func(w *validateWorld, c *model.Cluster) {
				w.etcdDown["a-2.etcd-main.internal.demo.example.com"] = true
				w.pods = w.pods[:8] // node2's etcd-main and etcd-events, and node3's pods
			},
			want: []string{
				"Pod kube-system/kube-apiserver-node3: kube-apiserver does not run on control-plane node node3: no mirror pod",
				"Pod kube-system/kube-controller-manager-node3: ",
				"Pod kube-system/kube-scheduler-node3: ",
				"EtcdMember main/a-2: https://a-2.etcd-main.internal.demo.example.com:",
				"Pod kube-system/etcd-main-node2: etcd-main does not run on control-plane node node2",
				"Pod kube-system/etcd-main-node3: ",
				"Pod kube-system/etcd-events-node2: ",
				"Pod kube-system/etcd-events-node3: ",
			},
		},
		{
			name: "a record points elsewhere, a name does not resolve, a pod is being deleted",
			change: func(w *validateWorld, c *model.Cluster) {
				w.dns[c.Spec.API.InternalName] = append(w.dns[c.Spec.API.InternalName], "10.9.9.9")
				delete(w.dns, "a-1.etcd-events.internal.demo.example.com")
				w.pods[0]["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-02T03:04:05Z"
			},
			want: []string{
				"Pod kube-system/kube-apiserver-node1: is being deleted (since 2026-01-02T03:04:05Z)",
				"EtcdMember events/a-1: unreachable: ",
				"DNSRecord api.internal.demo.example.com: points at 10.9.9.9, which is not the address of a Ready control-plane node",
				"DNSRecord a-1.etcd-events.internal.demo.example.com: does not resolve: ",
			},
		},
		{
			name: "a node of no instance group",
			change: func(w *validateWorld, c *model.Cluster) {
				w.nodes[0]["metadata"].(map[string]any)["labels"] = map[string]string{NodeLabelInstanceGroup: "gpu"}
			},
			want: []string{
				"Node node1: is labelled kubeup.dev/instancegroup=gpu, an instance group cluster demo.example.com does not have",
				"InstanceGroup control-plane-a-1: 0 nodes Ready",
				"DNSRecord api.demo.example.com: points at 127.0.0.1,",
				"DNSRecord api.internal.demo.example.com: points at 127.0.0.1,",
				"DNSRecord a-1.etcd-main.internal.demo.example.com: points at 127.0.0.1,",
				"DNSRecord a-1.etcd-events.internal.demo.example.com: points at 127.0.0.1,",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 3})
			if err != nil {
				t.Fatal(err)
			}
			c, igs = model.Complete(c, igs)
			w := healthyWorld(c)
			tt.change(w, c)
			val := w.serve(t, c, igs).validate(context.Background())
			var got []string
			for _, f := range val.Failures {
				got = append(got, f.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("failures (-want +got):\n%s", cmp.Diff(tt.want, got))
			}
			for k := range got {
				if !strings.HasPrefix(got[k], tt.want[k]) {
					t.Errorf("failure %d: %q, want it to begin %q", k, got[k], tt.want[k])
				}
			}
			if val.Healthy != (len(tt.want) == 0) {
				t.Errorf("Healthy %t with %d failures", val.Healthy, len(got))
			}
		})
	}
}

// TestNodeLabelIsNodeups: the label validation counts nodes by is the one nodeup gives kubelet (--node-labels in
// kubelet's environment file), for every instance group.
func TestNodeLabelIsNodeups(t *testing.T) {
	c, igs, err := model.NewCluster(model.NewClusterOptions{Name: demo, CloudProvider: model.CloudLocal, Zones: []string{"a"}, ControlPlaneCount: 1, NodeCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, igs = model.Complete(c, igs)
	for _, ig := range igs {
		g, err := nodegraph.BuildNodeGraph(model.NewNodeConfig(c, ig))
		if err != nil {
			t.Fatal(err)
		}
		want := NodeLabelInstanceGroup + "=" + ig.Metadata.Name
		found := false
		for _, task := range g.Tasks() {
			if f, ok := task.(*nodetasks.File); ok && f.Contents != nil && strings.Contains(*f.Contents, "--node-labels=") {
				found = found || strings.Contains(*f.Contents, want)
			}
		}
		if !found {
			t.Errorf("instance group %s: no file of its node sets kubelet's --node-labels with %s", ig.Metadata.Name, want)
		}
	}
}
