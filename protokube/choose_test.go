package protokube

import (
	"slices"
	"strings"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

func testConfig() *model.ProtokubeConfig {
	pc := &model.ProtokubeConfig{ClusterName: "demo.example.com", Zone: "a"}
	for _, name := range []string{"main", "events"} {
		ec := model.ProtokubeEtcdCluster{Name: name, TagKey: "k8s.io/etcd/" + name}
		for _, m := range []string{"a", "b", "c"} {
			ec.Members = append(ec.Members, model.ProtokubeEtcdMember{Name: m, Zone: "a", DNSName: m + ".etcd-" + name + ".internal.demo.example.com"})
		}
		pc.EtcdClusters = append(pc.EtcdClusters, ec)
	}
	return pc
}

func vol(id, cluster, member, zone, holder string) volumetasks.Volume {
	v := volumetasks.Volume{ID: id, Zone: zone, Tags: map[string]string{"k8s.io/etcd/" + cluster: member + "/a,b,c"}}
	if holder != "" {
		v.Holder = &volumetasks.Holder{NodeID: holder, InternalIP: "10.0.0." + strings.TrimPrefix(holder, "node"), ExternalIP: ""}
	}
	return v
}

// TestChoose: a node keeps what it holds, else claims the first free member volume of its zone, never a second
// one of an etcd cluster, never one another node holds, never one of another zone.
func TestChoose(t *testing.T) {
	tests := []struct {
		name     string
		vols     []volumetasks.Volume
		want     map[string]string // etcd cluster -> volume
		problems []string
	}{
		{name: "nothing held: the first free one of each cluster",
			vols: []volumetasks.Volume{vol("b.main", "main", "b", "a", ""), vol("a.main", "main", "a", "a", "node2"), vol("c.main", "main", "c", "a", ""), vol("a.events", "events", "a", "a", "")},
			want: map[string]string{"main": "b.main", "events": "a.events"}},
		{name: "what it holds, even when another is free",
			vols: []volumetasks.Volume{vol("a.main", "main", "a", "a", ""), vol("c.main", "main", "c", "a", "node1")},
			want: map[string]string{"main": "c.main"}},
		{name: "all held by others: none",
			vols: []volumetasks.Volume{vol("a.main", "main", "a", "a", "node2"), vol("b.main", "main", "b", "a", "node3")},
			want: map[string]string{}},
		{name: "another zone's volume is never claimed",
			vols: []volumetasks.Volume{vol("a.main", "main", "a", "b", "")},
			want: map[string]string{}},
		{name: "two held: serves one, says so, claims nothing more",
			vols:     []volumetasks.Volume{vol("a.main", "main", "a", "a", "node1"), vol("b.main", "main", "b", "a", "node1"), vol("c.main", "main", "c", "a", "")},
			want:     map[string]string{"main": "a.main"},
			problems: []string{"this node holds 2 member volumes of etcd cluster main: it serves a.main only; release b.main"}},
		{name: "a tag that names no member is left alone",
			vols:     []volumetasks.Volume{vol("x.main", "main", "x", "a", "")},
			want:     map[string]string{},
			problems: []string{"volume x.main: its tag k8s.io/etcd/main=x/a,b,c names no member of etcd cluster main: left alone"}},
		{name: "an id that is no plain name (it becomes a mount point) is left alone",
			vols: []volumetasks.Volume{vol("a.main/../../../etc", "main", "a", "a", ""), vol("..", "main", "a", "a", ""),
				vol("a.main\nx", "main", "a", "a", ""), vol("b.main", "main", "b", "a", "")},
			want: map[string]string{"main": "b.main"},
			problems: []string{`volume "a.main/../../../etc": its id is not a name protokube makes a mount point of`,
				`volume "..": its id is not a name`, `volume "a.main\nx": its id is not a name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := choose(testConfig(), "node1", tt.vols)
			got := map[string]string{}
			for c, mv := range ch.mine {
				got[c] = mv.volume.ID
				if mv.member == nil || !strings.HasPrefix(mv.volume.ID, mv.member.Name+".") {
					t.Errorf("%s: member %v for volume %s", c, mv.member, mv.volume.ID)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("chose %v, want %v", got, tt.want)
			}
			for c, id := range tt.want {
				if got[c] != id {
					t.Errorf("etcd cluster %s: chose %q, want %q", c, got[c], id)
				}
			}
			if len(ch.problems) != len(tt.problems) {
				t.Fatalf("problems %q, want %q", ch.problems, tt.problems)
			}
			for i, p := range tt.problems {
				if !strings.Contains(ch.problems[i], p) {
					t.Errorf("problem %q lacks %q", ch.problems[i], p)
				}
			}
		})
	}
}

// TestAPIAddresses: the API names carry every holder's address, of every zone, and this node's once it claims a
// volume; a node without an external address is reached at its internal one.
func TestAPIAddresses(t *testing.T) {
	vols := []volumetasks.Volume{vol("a.main", "main", "a", "a", "node2"), vol("b.main", "main", "b", "a", "node3"), vol("c.main", "main", "c", "a", ""), vol("a.events", "events", "a", "a", "node2"),
		vol("b.events", "events", "b", "b", "node4"), // another zone's holder is the API's too
		vol("x.events", "events", "x", "b", "node5")} // not a member's volume: its holder is not
	vols[1].Holder.ExternalIP = "203.0.113.3"
	ch := choose(testConfig(), "node1", vols)
	internal, external := ch.apiAddresses(volumetasks.Holder{NodeID: "node1", InternalIP: "10.0.0.1", ExternalIP: "203.0.113.1"})
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}; !slices.Equal(internal, want) {
		t.Errorf("internal %v, want %v", internal, want)
	}
	if want := []string{"10.0.0.2", "10.0.0.4", "203.0.113.1", "203.0.113.3"}; !slices.Equal(external, want) {
		t.Errorf("external %v, want %v", external, want)
	}
}

// TestHolderAddresses: a claim's IPv4-mapped address counts as the IPv4 address it is; one that is no IPv4 address
// is left out of the API's records and said, and the other nodes' records are still made.
func TestHolderAddresses(t *testing.T) {
	mapped := vol("a.main", "main", "a", "a", "node2")
	mapped.Holder.InternalIP = "::ffff:10.0.0.7"
	bad := vol("b.main", "main", "b", "a", "node3")
	bad.Holder.InternalIP, bad.Holder.ExternalIP = "fd00::3", "203.0.113.3"
	ch := choose(testConfig(), "node1", []volumetasks.Volume{mapped, bad})
	internal, external := ch.apiAddresses(volumetasks.Holder{NodeID: "node1", InternalIP: "10.0.0.1"})
	if want := []string{"10.0.0.7"}; !slices.Equal(internal, want) {
		t.Errorf("internal %v, want %v", internal, want)
	}
	if want := []string{"10.0.0.7", "203.0.113.3"}; !slices.Equal(external, want) {
		t.Errorf("external %v, want %v", external, want)
	}
	if len(ch.problems) != 1 || !strings.Contains(ch.problems[0], `node node3's claim of volume b.main records the address "fd00::3", which is no IPv4 address`) {
		t.Errorf("problems %q", ch.problems)
	}
}

// TestCheckAddressesAndDurations: an IPv4-mapped --internal-ip is taken as its IPv4 address; what is no IPv4
// address, a negative interval or lease, an interval under MinInterval, a lease under MinLease, and a lease not
// longer than the interval are refused.
func TestCheckAddressesAndDurations(t *testing.T) {
	me := volumetasks.Holder{NodeID: "n1", InternalIP: "::ffff:10.0.0.1", ExternalIP: "203.0.113.1"}
	if err := checkAddresses(&me); err != nil || me.InternalIP != "10.0.0.1" || me.ExternalIP != "203.0.113.1" {
		t.Errorf("checkAddresses = %v, %+v", err, me)
	}
	for _, bad := range []volumetasks.Holder{{InternalIP: "fd00::1"}, {InternalIP: "10.0.0.300"}, {ExternalIP: "2001:db8::1"}} {
		if err := checkAddresses(&bad); err == nil {
			t.Errorf("checkAddresses(%+v) accepted it", bad)
		}
	}
	for _, tt := range []struct {
		interval, lease time.Duration
		want            string
	}{
		{interval: -time.Second, want: "--interval -1s: want a positive time"},
		{lease: -time.Second, want: "--lease -1s: want a positive duration"},
		{interval: time.Minute, lease: time.Second, want: "--lease 1s is not longer than --interval 1m0s"},
		{interval: time.Minute, lease: time.Minute, want: "is not longer than --interval"},
		{interval: time.Minute},
		{interval: time.Minute, lease: 5 * time.Minute},
		// Found by probing: --interval=1ns ran 2,083 rounds in 3 s, and its default lease of 5 ns lapsed at once.
		{interval: time.Nanosecond, want: "--interval 1ns is shorter than the minimum, 1s"},
		{interval: 999 * time.Millisecond, want: "give --interval 1s or more"},
		{interval: time.Second},
		{interval: time.Second, lease: 4 * time.Second, want: "--lease 4s is shorter than the minimum, 5s"},
		{interval: time.Second, lease: 5 * time.Second},
	} {
		o := &Options{Conf: "x", Root: t.TempDir(), Interval: tt.interval, Lease: tt.lease, Node: volumetasks.Holder{NodeID: "n1"}}
		err := o.defaults()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("interval %s, lease %s: %v, want %q", tt.interval, tt.lease, err, tt.want)
		}
	}
	// A --node-id with a control character is refused, quoted, as nodeup's (model.ValidNodeID).
	o := &Options{Conf: "x", Root: t.TempDir(), Node: volumetasks.Holder{NodeID: "n1\x1b[2J"}}
	if err := o.defaults(); err == nil || !strings.Contains(err.Error(), `--node-id: node id "n1\x1b[2J" holds '\x1b'`) {
		t.Errorf("--node-id with ESC: %v, want it refused, quoted", err)
	}
}
