package protokube

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"kubeup.dev/kubeup/model"
	"kubeup.dev/kubeup/tasks/volumetasks"
)

// memberVolume is an etcd member's volume, with the member its tags name.
type memberVolume struct {
	volume  volumetasks.Volume
	cluster *model.ProtokubeEtcdCluster
	member  *model.ProtokubeEtcdMember
}

// choice is what a round found and decided: for each etcd cluster, the member volume this node holds or claims
// (absent: none), the member volumes of this zone this node is attached to but lost to another node (it detaches
// them), every member volume of the cluster in this zone with its holder, and the holders of member volumes in
// every zone (the API's names point at them all).
type choice struct {
	mine     map[string]memberVolume // by etcd cluster name
	lost     []memberVolume
	all      []memberVolume
	holders  map[string]volumetasks.Holder // by node id, every zone's
	problems []string                      // what the operator should know: logged every round, never acted on
}

// choose decides which member volume of each etcd cluster this node holds: the one it holds already, else the
// first free one of its zone (by ID), else none. A volume attached to this node and to others at once is held by
// the one that won it (the provider says: Holder); a node that lost it lets it go (lost), and may claim another.
// A node never claims a second member volume of one etcd cluster:
// when it holds several already (which kubeup never does), it keeps the first and says so, leaving the others
// as they are for the operator. A volume whose tag names no member of the spec is left alone, and said. The
// member volumes of other zones are never claimed; their holders are the API's too.
func choose(pc *model.ProtokubeConfig, me string, vols []volumetasks.Volume) *choice {
	ch := &choice{mine: map[string]memberVolume{}, holders: map[string]volumetasks.Holder{}}
	for i := range pc.EtcdClusters {
		ec := &pc.EtcdClusters[i]
		var held, free []memberVolume
		for _, v := range vols {
			tag, ok := v.Tags[ec.TagKey]
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(tag, "/")
			j := slices.IndexFunc(ec.Members, func(m model.ProtokubeEtcdMember) bool { return m.Name == name })
			if j >= 0 && v.Holder != nil {
				ch.holders[v.Holder.NodeID] = ch.holderAddresses(*v.Holder, v.ID)
			}
			if v.Zone != pc.Zone {
				continue
			}
			if j < 0 {
				ch.problems = append(ch.problems, fmt.Sprintf("volume %s: its tag %s=%s names no member of etcd cluster %s: left alone", v.ID, ec.TagKey, tag, ec.Name))
				continue
			}
			if !plainVolumeID(v.ID) {
				ch.problems = append(ch.problems, fmt.Sprintf("volume %q: its id is not a name protokube makes a mount point of (letters, digits, '-', '_' and '.', not first): left alone; "+
					"a local pool's volume file renamed by hand: give it back its name; a cloud's: check which API answers", v.ID))
				continue
			}
			mv := memberVolume{volume: v, cluster: ec, member: &ec.Members[j]}
			ch.all = append(ch.all, mv)
			switch {
			case v.Holder == nil:
				free = append(free, mv)
			case v.Holder.NodeID == me:
				held = append(held, mv)
			case slices.ContainsFunc(v.AlsoAttached, func(h volumetasks.Holder) bool { return h.NodeID == me }):
				ch.lost = append(ch.lost, mv)
				ch.problems = append(ch.problems, fmt.Sprintf("volume %s is attached to this node and to node %s, which won it: this node detaches its attachment once nothing here uses it",
					v.ID, v.Holder.NodeID))
			}
		}
		switch {
		case len(held) > 0:
			ch.mine[ec.Name] = held[0]
			if len(held) > 1 {
				var ids []string
				for _, h := range held[1:] {
					ids = append(ids, h.volume.ID)
				}
				ch.problems = append(ch.problems, fmt.Sprintf("this node holds %d member volumes of etcd cluster %s: it serves %s only; release %s (detach it) so that another node can serve it",
					len(held), ec.Name, held[0].volume.ID, strings.Join(ids, ", ")))
			}
		case len(free) > 0:
			ch.mine[ec.Name] = free[0]
		}
	}
	return ch
}

// holderAddresses returns h with its addresses as IPv4 addresses in their usual form; one that is no IPv4
// address (a claim written by hand, or by a protokube that did not check) is left out, and said, rather than
// fail every node's API records.
func (ch *choice) holderAddresses(h volumetasks.Holder, volume string) volumetasks.Holder {
	for _, a := range []*string{&h.InternalIP, &h.ExternalIP} {
		v, ok := ipv4(*a)
		if !ok {
			ch.problems = append(ch.problems, fmt.Sprintf("node %s's claim of volume %s records the address %q, which is no IPv4 address: "+
				"left out of the API's records; fix that node's --internal-ip/--external-ip", h.NodeID, volume, *a))
			v = ""
		}
		*a = v
	}
	return h
}

// apiAddresses are the addresses the API names carry: the internal and external addresses of every node that
// holds (or, this round, claims) a member volume, in any zone, sorted, without duplicates.
func (ch *choice) apiAddresses(me volumetasks.Holder) (internal, external []string) {
	holders := maps.Clone(ch.holders)
	if len(ch.mine) > 0 {
		holders[me.NodeID] = me
	}
	for _, h := range holders {
		if h.InternalIP != "" {
			internal = append(internal, h.InternalIP)
		}
		switch {
		case h.ExternalIP != "":
			external = append(external, h.ExternalIP)
		case h.InternalIP != "":
			external = append(external, h.InternalIP) // a machine without a public address: the API is reached inside
		}
	}
	slices.Sort(internal)
	slices.Sort(external)
	return slices.Compact(internal), slices.Compact(external)
}

// plainVolumeID says whether a volume id, as the provider's API gave it, is a plain name: it becomes a path
// (the mount point /mnt/master-<id>, etcd's data directory under it), so one that is not (a "/", "..", a control
// character) from an API that lies or a pool edited by hand is never used. EBS ids, GCE disk names and the local
// pool's volume names are all plain.
func plainVolumeID(id string) bool {
	if id == "" || len(id) > 255 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
