package protokube

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/internal/fakegce"
	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/awstasks"
	"kubeup.dev/kubeup/tasks/dnstasks"
	"kubeup.dev/kubeup/tasks/gcetasks"
	"kubeup.dev/kubeup/tasks/localtasks"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// newRunner is a DNS provider as a round reaches it: NewRun forgets what the former round read (Route53, Cloud
// DNS).
type newRunner interface{ NewRun() }

// TestAPINamesOnlyReadyServers: the API's names hold the address of a node only while it holds a member volume
// and its own kube-apiserver is ready, on every provider alike (a hosts file, Route53, Cloud DNS, through the
// fakes): no address before any kube-apiserver is ready (the placeholder stays), each node adds itself once its
// own is ready and withdraws itself when it stops (the others' addresses kept), a node whose claim ended (a dead
// node: its lease expired, its volume detached) is removed by the others, and the last one to withdraw leaves
// the placeholder, not an empty name. A spare node's ready kube-apiserver is not published.
func TestAPINamesOnlyReadyServers(t *testing.T) {
	const zone, internalName, publicName = "example.com", "api.internal.demo.example.com", "api.demo.example.com"
	providers := map[string]func(t *testing.T) dnstasks.Provider{
		"hosts": func(t *testing.T) dnstasks.Provider {
			p, err := localtasks.NewHostsFile(filepath.Join(t.TempDir(), "hosts"), zone)
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		"route53": func(t *testing.T) dnstasks.Provider {
			f := newAWSAccount(t, zone, "")
			return awstasks.NewRoute53(f.route53, zone)
		},
		"clouddns": func(t *testing.T) dnstasks.Provider {
			hs := httptest.NewServer(fakegce.New())
			t.Cleanup(hs.Close)
			svc, err := dns.NewService(context.Background(), option.WithEndpoint(hs.URL+"/dns/v1/"), option.WithoutAuthentication())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.ManagedZones.Create("p", &dns.ManagedZone{Name: "example-com", DnsName: zone + ".", Description: "test"}).Do(); err != nil {
				t.Fatal(err)
			}
			return gcetasks.NewCloudDNS(svc, "p", zone)
		},
	}
	pc := testConfig()
	pc.DNSNames = []string{internalName, publicName}
	node := func(n int) volumetasks.Holder {
		return volumetasks.Holder{NodeID: fmt.Sprintf("node%d", n), InternalIP: fmt.Sprintf("10.0.0.%d", n), ExternalIP: fmt.Sprintf("203.0.113.%d", n)}
	}
	notReady := errors.New("dial tcp 127.0.0.1:443: connect: connection refused")
	for name, provider := range providers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p := provider(t)
			for _, n := range []string{internalName, publicName} { // what kubeup's cloud graph makes
				if err := p.Upsert(ctx, dnstasks.RecordSet{Name: n, Type: "A", TTL: 60, Values: []string{model.DNSPlaceholderIPv4}}); err != nil {
					t.Fatal(err)
				}
			}
			// holders are the nodes that hold a member volume (node 4 is a spare).
			holders := []int{1, 2, 3}
			round := func(n int, api error) {
				t.Helper()
				if r, ok := p.(newRunner); ok {
					r.NewRun()
				}
				var vols []volumetasks.Volume
				for i, h := range holders {
					v := vol(fmt.Sprintf("%c.main", 'a'+i), "main", string(rune('a'+i)), "a", "")
					hh := node(h)
					v.Holder = &hh
					vols = append(vols, v)
				}
				ch := choose(pc, node(n).NodeID, vols)
				g := engine.NewGraph[*Round]()
				addAPIRecords(g, pc, node(n), ch, api)
				if _, err := engine.Run(ctx, g, &Round{dns: p}, engine.Options{Target: engine.Apply}); err != nil {
					t.Fatalf("node%d's round: %v", n, err)
				}
			}
			check := func(when string, want ...int) {
				t.Helper()
				if r, ok := p.(newRunner); ok {
					r.NewRun()
				}
				internal, public := []string{model.DNSPlaceholderIPv4}, []string{model.DNSPlaceholderIPv4}
				if len(want) > 0 {
					internal, public = nil, nil
					for _, n := range want {
						internal, public = append(internal, node(n).InternalIP), append(public, node(n).ExternalIP)
					}
				}
				for n, values := range map[string][]string{internalName: internal, publicName: public} {
					rs, err := p.Get(ctx, n, "A")
					if err != nil {
						t.Fatal(err)
					}
					if rs == nil || !slices.Equal(rs.Values, values) {
						t.Errorf("%s: %s holds %+v, want %v", when, n, rs, values)
					}
				}
			}

			for _, n := range []int{1, 2, 3} {
				round(n, notReady)
			}
			check("first boot, no kube-apiserver ready")
			round(2, nil)
			check("node2's kube-apiserver ready", 2)
			round(1, nil)
			round(3, notReady)
			round(4, nil)
			check("node1's ready too, node3's not yet, node4 a spare", 1, 2)
			round(3, nil)
			check("all three ready", 1, 2, 3)
			round(2, errors.New("GET https://127.0.0.1:443/readyz: 500 Internal Server Error: etcd failed"))
			check("node2's kube-apiserver stopped being ready", 1, 3)
			// node3 dies: its claim ends (its lease expired, its volume detached), and node1 removes its address.
			holders = []int{1, 2}
			round(1, nil)
			check("node3 dead and its claim ended", 1)
			round(1, notReady)
			check("the last ready kube-apiserver stopped")
		})
	}
}
